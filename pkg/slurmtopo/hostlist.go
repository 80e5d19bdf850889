package slurmtopo

import (
	"sort"
	"strconv"
	"strings"
)

// host is one name split as Slurm's hostlist splits it: a prefix and,
// when the name ends in digits, their value and width.
type host struct {
	prefix string
	num    uint64
	width  int  // number of digits (0: no numeric suffix)
	padded bool // the digits have leading zeros
}

func splitHost(name string) host {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits := name[i:]
	if digits == "" || len(digits) > 18 {
		return host{prefix: name}
	}
	n, _ := strconv.ParseUint(digits, 10, 64)
	return host{prefix: name[:i], num: n, width: len(digits), padded: len(digits) > 1 && digits[0] == '0'}
}

// combine reports whether a and b can share a range: the same prefix and
// the same width, or widths that differ only because neither number is
// zero-padded (node9 and node10 make node[9-10]).
func combine(a, b host) bool {
	if a.prefix != b.prefix || a.width == 0 || b.width == 0 {
		return false
	}
	return a.width == b.width || (!a.padded && !b.padded)
}

// less orders hosts as Slurm's hostlist_sort does: by prefix (natural
// order), names without a number first, then by number where the widths
// combine and by width where they do not.
func less(a, b host) bool {
	if c := natCmp(a.prefix, b.prefix); c != 0 {
		return c < 0
	}
	if (a.width == 0) != (b.width == 0) {
		return a.width == 0
	}
	if combine(a, b) || a.width == b.width {
		return a.num < b.num
	}
	return a.width < b.width
}

// natCmp compares strings with runs of digits compared as numbers.
func natCmp(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, y := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(x) != len(y) {
				return len(x) - len(y)
			}
			if x != y {
				return strings.Compare(x, y)
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Compress returns names as a Slurm hostlist expression, sorted and
// compressed as Slurm writes them (scontrol show hostlist): node001,
// node002, node003, node004, node007 become node[001-004,007]; duplicate
// names are listed once.
func Compress(names []string) string {
	hs := make([]host, 0, len(names))
	for _, n := range names {
		if n != "" {
			hs = append(hs, splitHost(n))
		}
	}
	sort.SliceStable(hs, func(i, j int) bool { return less(hs[i], hs[j]) })

	// ranges of consecutive numbers
	type rng struct {
		h      host
		hi     uint64
		hiW    int
		single bool
	}
	var rs []rng
	for _, h := range hs {
		if len(rs) > 0 {
			r := &rs[len(rs)-1]
			if !r.single && combine(r.h, h) && (h.num == r.hi || h.num == r.hi+1) {
				if h.num == r.hi+1 {
					r.hi, r.hiW = h.num, h.width
				}
				continue
			}
			if r.single && h.width == 0 && r.h.prefix == h.prefix {
				continue // duplicate name
			}
		}
		rs = append(rs, rng{h: h, hi: h.num, hiW: h.width, single: h.width == 0})
	}

	num := func(v uint64, w int) string {
		s := strconv.FormatUint(v, 10)
		if len(s) < w {
			s = strings.Repeat("0", w-len(s)) + s
		}
		return s
	}
	text := func(r rng) string {
		s := num(r.h.num, r.h.width)
		if r.hi != r.h.num {
			s += "-" + num(r.hi, r.h.width)
		}
		return s
	}
	var b strings.Builder
	for i := 0; i < len(rs); {
		if i > 0 {
			b.WriteByte(',')
		}
		r := rs[i]
		if r.single {
			b.WriteString(r.h.prefix)
			i++
			continue
		}
		j := i + 1
		for j < len(rs) && !rs[j].single && rs[j].h.prefix == r.h.prefix {
			j++
		}
		b.WriteString(r.h.prefix)
		if j == i+1 && r.hi == r.h.num {
			b.WriteString(text(r))
			i = j
			continue
		}
		b.WriteByte('[')
		for k := i; k < j; k++ {
			if k > i {
				b.WriteByte(',')
			}
			b.WriteString(text(rs[k]))
		}
		b.WriteByte(']')
		i = j
	}
	return b.String()
}
