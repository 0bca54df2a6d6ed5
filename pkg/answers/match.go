package answers

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Matching answers against expected facts. A substring test is wrong both ways: "IP" is in
// "multiple", "NIC" in "communication", "LID" in "valid" (wrong answers pass), and a model
// writing "2(N−1)/N" with a Unicode minus fails a check for "2(N-1)/N" (right answers fail).
// Both sides are therefore normalised (NFKC, every dash or minus sign to '-', case folded
// unless asked not to) and cut into tokens: runs of letters, digits and '_' are words, every
// other non-space character is a token of its own. An expected phrase matches where its
// tokens occur contiguously; spacing does not matter ("2 (n - 1) / n" matches "2(n-1)/n"),
// and a word may carry an English plural ending ("NICs" matches "NIC").

// dashes are the characters NFKC leaves alone that people and models write for a minus or
// hyphen: U+2010 hyphen, U+2011 non-breaking hyphen, U+2012 figure dash, U+2013 en dash,
// U+2014 em dash, U+2212 minus sign. (NFKC already maps U+FE63 and U+FF0D to '-'.)
var dashes = strings.NewReplacer("\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2212", "-")

// normalize applies NFKC, maps dashes to '-', and folds case unless caseSensitive.
func normalize(s string, caseSensitive bool) string {
	s = dashes.Replace(norm.NFKC.String(s))
	if !caseSensitive {
		s = strings.ToLower(s)
	}
	return s
}

// token is one token and where it is in the normalised text.
type token struct {
	text       string
	start, end int // byte offsets
	word       bool
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// tokenize cuts normalised text into tokens.
func tokenize(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		r, size := rune(s[i]), 1
		if r >= 0x80 {
			r, size = decodeRune(s[i:])
		}
		switch {
		case unicode.IsSpace(r):
			i += size
		case isWordRune(r):
			j := i + size
			for j < len(s) {
				r2, n := rune(s[j]), 1
				if r2 >= 0x80 {
					r2, n = decodeRune(s[j:])
				}
				if !isWordRune(r2) {
					break
				}
				j += n
			}
			out = append(out, token{text: s[i:j], start: i, end: j, word: true})
			i = j
		default:
			out = append(out, token{text: s[i : i+size], start: i, end: i + size})
			i += size
		}
	}
	return out
}

func decodeRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 1
}

// wordMatches: the answer's word a equals the expected word w, or is its plural (w+"s",
// w+"es") when w is alphabetic and at least two letters.
func wordMatches(a, w string) bool {
	if a == w {
		return true
	}
	if len(w) < 2 || !isAlpha(w) {
		return false
	}
	return a == w+"s" || a == w+"es"
}

func isAlpha(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// findPhrase returns the byte range in text (normalised) where the phrase's tokens occur
// contiguously, or -1.
func findPhrase(text []token, phrase []token) (int, int) {
	if len(phrase) == 0 {
		return -1, -1
	}
outer:
	for i := 0; i+len(phrase) <= len(text); i++ {
		for k, p := range phrase {
			t := text[i+k]
			if p.word != t.word || (p.word && !wordMatches(t.text, p.text)) || (!p.word && t.text != p.text) {
				continue outer
			}
		}
		return text[i].start, text[i+len(phrase)-1].end
	}
	return -1, -1
}

// evidence is a short excerpt of s around [start, end) for a report.
func evidence(s string, start, end int) string {
	from, to := start-30, end+30
	if from < 0 {
		from = 0
	}
	if to > len(s) {
		to = len(s)
	}
	for from > 0 && !isBoundary(s, from) {
		from--
	}
	for to < len(s) && !isBoundary(s, to) {
		to++
	}
	out := strings.Join(strings.Fields(s[from:to]), " ")
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

func isBoundary(s string, i int) bool { return i <= 0 || i >= len(s) || s[i]&0xC0 != 0x80 }

// number is a number found in an answer.
type number struct {
	value      float64
	start, end int
}

// numbers finds the numbers in normalised text: digits with an optional decimal part and
// thousands separators ("4,791", "1 000" is two numbers), an exponent, and a leading minus
// only where it cannot be a hyphen or an operator (at the start, after a space or '(').
func numbers(s string) []number {
	var out []number
	i := 0
	for i < len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9') {
			i++
			continue
		}
		if i > 0 && isWordByte(s[i-1]) {
			// Digits inside a word (mlx5_0, RoCEv2): not a quantity.
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
			continue
		}
		start := i
		neg := i > 0 && s[i-1] == '-' && (i == 1 || s[i-2] == ' ' || s[i-2] == '(')
		j := i
		var digits strings.Builder
		for j < len(s) {
			if s[j] >= '0' && s[j] <= '9' {
				digits.WriteByte(s[j])
				j++
				continue
			}
			// A thousands comma: exactly three digits follow, then no digit.
			if s[j] == ',' && j+4 <= len(s) && allDigits(s[j+1:j+4]) && (j+4 == len(s) || s[j+4] < '0' || s[j+4] > '9') {
				j++
				continue
			}
			break
		}
		if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
			digits.WriteByte('.')
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				digits.WriteByte(s[j])
				j++
			}
		}
		if j+1 < len(s) && (s[j] == 'e' || s[j] == 'E') {
			k := j + 1
			if k < len(s) && (s[k] == '-' || s[k] == '+') {
				k++
			}
			if k < len(s) && s[k] >= '0' && s[k] <= '9' {
				digits.WriteString(s[j:k])
				for k < len(s) && s[k] >= '0' && s[k] <= '9' {
					digits.WriteByte(s[k])
					k++
				}
				j = k
			}
		}
		// A number glued to letters after it ("4ms", "25gbps") still counts: units are common.
		if v, err := strconv.ParseFloat(digits.String(), 64); err == nil {
			if neg {
				v, start = -v, start-1
			}
			out = append(out, number{value: v, start: start, end: j})
		}
		i = j
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// within reports whether got is value within an absolute tolerance abs or a relative one rel
// (a fraction of |value|); with neither, the numbers must be equal.
func within(got, value, abs, rel float64) bool {
	tol := math.Max(abs, rel*math.Abs(value))
	return math.Abs(got-value) <= tol+1e-12*math.Max(1, math.Abs(value))
}
