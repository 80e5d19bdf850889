// Package suggest finds, for a word the user typed that matches nothing,
// the nearest of the words that would have matched ("did you mean").
package suggest

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Closest returns up to n of candidates nearest to word, nearest first:
// those word is a prefix of (or a word of, as "node001" of "node001
// mlx5_0"), then those within a few edits (case-insensitive Levenshtein
// distance at most a third of word's length, and at least 2). None when
// nothing is near.
func Closest(word string, candidates []string, n int) []string {
	type scored struct {
		s     string
		score int
	}
	w := strings.ToLower(word)
	var near []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] || c == "" {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		score := -1
		switch {
		case w == "":
		case strings.HasPrefix(lc, w) || slices.Contains(strings.FieldsFunc(lc, sep), w):
			score = 0
		default:
			d := distance(w, lc)
			if d <= max(2, utf8.RuneCountInString(w)/3) {
				score = d
			}
		}
		if score >= 0 {
			near = append(near, scored{c, score})
		}
	}
	sort.SliceStable(near, func(i, j int) bool {
		if near[i].score != near[j].score {
			return near[i].score < near[j].score
		}
		return len(near[i].s) < len(near[j].s)
	})
	var out []string
	for i := 0; i < len(near) && i < n; i++ {
		out = append(out, near[i].s)
	}
	return out
}

func sep(r rune) bool { return r == ' ' || r == '\t' || r == '/' || r == ',' }

// distance is the Levenshtein distance between a and b (in runes).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// DidYouMean is " (did you mean X?)", " (did you mean X or Y?)" for the
// suggestions quoted by quote, or "" without any.
func DidYouMean(suggestions []string, quote func(string) string) string {
	if len(suggestions) == 0 {
		return ""
	}
	q := make([]string, len(suggestions))
	for i, s := range suggestions {
		q[i] = quote(s)
	}
	if len(q) == 1 {
		return " (did you mean " + q[0] + "?)"
	}
	return " (did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?)"
}
