package netfile

// C-library number parsing as ibsim uses it (strtoul/strtol with base 0,
// atoi), so that odd inputs are read the same way.

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func hexVal(c byte) (uint64, bool) {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0'), true
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return uint64(c|0x20-'a') + 10, true
	}
	return 0, false
}

// strtoul parses like C strtoull(s, &end, 0): leading space, optional
// sign, 0x/0 prefixes; it saturates on overflow. n is the number of bytes
// consumed, 0 when there is no number.
func strtoul(s string) (v uint64, n int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	if i < len(s) && s[i] == '0' {
		if i+2 < len(s) && (s[i+1]|0x20) == 'x' {
			if _, ok := hexVal(s[i+2]); ok {
				base = 16
				i += 2
			}
		}
		if base == 10 {
			base = 8
		}
	}
	start := i
	over := false
	for i < len(s) {
		d, ok := hexVal(s[i])
		if !ok || d >= base {
			break
		}
		if v > (^uint64(0)-d)/base {
			over = true
		}
		v = v*base + d
		i++
	}
	if i == start {
		return 0, 0
	}
	if over {
		v = ^uint64(0)
	}
	if neg {
		v = -v
	}
	return v, i
}

// atoi parses like C atoi: decimal, leading space and sign.
func atoi(s string) int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	v := 0
	for i < len(s) && isDigit(s[i]) {
		if v < 1<<30 {
			v = v*10 + int(s[i]-'0')
		}
		i++
	}
	if neg {
		return -v
	}
	return v
}

// sint returns strtoul's value as a C int would hold it.
func sint(s string) int {
	v, _ := strtoul(s)
	return int(int32(uint32(v)))
}
