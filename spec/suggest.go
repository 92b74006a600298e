// Suggestions: the did-you-mean for an unknown key.

package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// hints name the field meant by keys that other tools use.
var hints = map[string]string{
	"on_failure":   "result_handling: {on_failure: ...}",
	"depends_on":   "needs",
	"dependencies": "needs",
	"depends":      "needs",
	"command":      "run",
	"cmd":          "run",
	"script":       "run",
	"retries":      "max_retries",
	"vars":         "context",
	"variables":    "context",
	"environment":  "env",
	"workdir":      "dir",
	"cwd":          "dir",
}

// suggest returns ` (did you mean "x"?)` for the accepted key closest to key.
func suggest(key string, accepted []string) string {
	best, bestD := "", 1<<30
	lk := strings.ToLower(key)
	for _, a := range accepted {
		d := editDistance(lk, a)
		if d < bestD {
			best, bestD = a, d
		}
	}
	limit := 2
	switch n := utf8.RuneCountInString(key); {
	case n <= 2:
		limit = 0
	case n <= 4:
		limit = 1
	}
	if best != "" && bestD <= limit {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if h, ok := hints[lk]; ok {
		target := strings.SplitN(h, ":", 2)[0]
		if contains(accepted, target) {
			return fmt.Sprintf(" (did you mean %q?)", h)
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (in runes),
// counting a swap of two adjacent runes as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
