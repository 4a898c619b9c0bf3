// Package spelling finds the name a misspelt one most likely meant, for the
// "did you mean" of errors (flow files, the Terraform contract tests).
package spelling

import "strings"

// Nearest returns the first of names closest to name by edit distance,
// ignoring case, when it is within two edits; "" when none is.
func Nearest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := Distance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of two strings, by byte.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
