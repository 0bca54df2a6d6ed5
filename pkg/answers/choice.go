package answers

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// Multiple-choice cases, scored as lm-evaluation-harness scores its generative multiple-choice
// tasks: the question is sent with its options lettered A, B, C, ..., the letter the model
// picks is extracted from its answer, and the case passes when it is the right one. Unlike a
// keyword check, a fluent answer that names every keyword but picks a wrong option fails.

// choiceLetters are the letters options may have (at most 10 options).
const choiceLetters = "ABCDEFGHIJ"

// ChoicePrompt is the question with its options, as sent to the model.
func ChoicePrompt(question string, choices []string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(question))
	b.WriteString("\n")
	for i, c := range choices {
		fmt.Fprintf(&b, "\n%c. %s", choiceLetters[i], strings.TrimSpace(c))
	}
	fmt.Fprintf(&b, "\n\nAnswer with the letter (A-%c) of the correct option.", choiceLetters[len(choices)-1])
	return b.String()
}

var (
	// "The answer is (B)", "Answer: **C**", "the correct option is D.", "I choose B": the last
	// such statement wins (a model may discuss options before it concludes).
	choiceStated = lazyre.New(`(?i:answer|correct (?:option|choice|letter)|choose|pick|select)(?:\s+(?i:is|would be|=))?\s*:?\s*(?i:option\s+)?[*_]*[(\[]?([A-J])[)\]]?[*_]*(?:[^A-Za-z0-9]|$)`)
	// An answer that starts with the letter: "B", "B)", "(B) ...", "B. ...", "**B** ...", "B: ...".
	choiceLeading = lazyre.New(`^\s*[*_]*[(\[]?([A-J])(?:[)\].:]|[*_]+|\s*$|\s+-\s)`)
	// A letter marked anywhere: "**B**" or "(B)".
	choiceMarked = lazyre.New(`\*\*\(?([A-J])\)?\*\*|\(([A-J])\)`)
)

// ExtractChoice returns the letter of the option an answer picks among n options, with the
// text that shows it; "" when it picks none or several. In order: an explicit statement ("the
// answer is (B)"; the last one), a leading letter ("B) ..."), a single letter marked in bold
// or parentheses, the text of exactly one option.
func ExtractChoice(answer string, choices []string) (letter, shown string) {
	n := len(choices)
	valid := func(l string) bool { return l != "" && strings.Index(choiceLetters, l) < n }
	text := strings.TrimSpace(norm1(answer))
	if ms := choiceStated().FindAllStringSubmatchIndex(text, -1); len(ms) > 0 {
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if l := text[m[2]:m[3]]; valid(l) {
				return l, evidence(text, m[0], m[1])
			}
		}
	}
	if m := choiceLeading().FindStringSubmatchIndex(text); m != nil {
		if l := text[m[2]:m[3]]; valid(l) {
			return l, evidence(text, m[0], m[1])
		}
	}
	seen, ev := "", ""
	for _, m := range choiceMarked().FindAllStringSubmatchIndex(text, -1) {
		l := ""
		if m[2] >= 0 {
			l = text[m[2]:m[3]]
		} else {
			l = text[m[4]:m[5]]
		}
		if !valid(l) {
			continue
		}
		if seen != "" && seen != l {
			return "", ""
		}
		seen, ev = l, evidence(text, m[0], m[1])
	}
	if seen != "" {
		return seen, ev
	}
	low := normalize(text, false)
	for i, c := range choices {
		if s := strings.Index(low, normalize(strings.TrimSpace(c), false)); s >= 0 && c != "" {
			if seen != "" {
				return "", ""
			}
			seen, ev = string(choiceLetters[i]), evidence(low, s, s+len(normalize(strings.TrimSpace(c), false)))
		}
	}
	return seen, ev
}

// norm1 is NFKC with dashes mapped, case kept (letters are upper case).
func norm1(s string) string { return normalize(s, true) }

// checkChoice is the multiple-choice check of an answer.
func (c *QACase) checkChoice(answer string) QACheck {
	want := strings.ToUpper(c.Answer)
	ck := QACheck{Kind: "choice", Expect: fmt.Sprintf("%s (%s)", want, oneLineText(c.Choices[strings.Index(choiceLetters, want)], 60))}
	got, ev := ExtractChoice(answer, c.Choices)
	switch {
	case got == "":
		ck.Evidence = "no option letter picked (or several)"
	case got == want:
		ck.Pass, ck.Evidence = true, ev
	default:
		ck.Evidence = fmt.Sprintf("picked %s (%s): %s", got, oneLineText(c.Choices[strings.Index(choiceLetters, got)], 60), ev)
	}
	return ck
}
