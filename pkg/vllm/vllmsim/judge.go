package vllmsim

import (
	"strings"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// CourseJudge is the judge model the course's answer checks name (recipes/qa/course-qa.yaml);
// the simulation answers it as a judge by default.
const CourseJudge = "Qwen2.5-72B-Instruct"

// Grade is a deterministic stand-in for a judge model given the fact-comparison rubric
// (OpenAI evals' fact template, as ain's chat test sends it): it reads the question, the
// expert answer and the submission from the prompt and replies with a class, (A) subset,
// (C) same or (D) disagreement, and one sentence. It is not a language model: it compares
// facts as a competent judge would on short technical answers, by their key terms
// (acronyms, identifiers, numbers: UDP, NCCL_IB_HCA, mlx5_0, 4791, 2(n-1)/n): a key term the
// submission states in a negated clause ("does not use UDP", "PFC should be disabled") while
// the expert answer does not negate it is a disagreement; all key terms stated is the same;
// at least half is a consistent subset; fewer is a disagreement (the submission does not
// state what the expert answer says).
func Grade(prompt string) string {
	expert, sub := section(prompt, "[Expert]:"), section(prompt, "[Submission]:")
	if expert == "" {
		return "(D) There is no expert answer to compare with."
	}
	terms := keyTerms(expert)
	if len(terms) == 0 {
		terms = words(expert)
	}
	stated, missing := 0, []string{}
	subClauses, expClauses := clauses(sub), clauses(expert)
	for _, t := range terms {
		found := false
		for _, c := range subClauses {
			if !containsWord(c, t) {
				continue
			}
			found = true
			if negated(c) && !negatedIn(expClauses, t) {
				return "(D) The submission denies what the expert answer states about " + t + ": \"" + strings.TrimSpace(c) + "\"."
			}
		}
		if found {
			stated++
		} else {
			missing = append(missing, t)
		}
	}
	switch {
	case stated == len(terms):
		return "(C) The submission states the same facts as the expert answer."
	case 2*stated >= len(terms):
		return "(A) The submission states part of the expert answer's facts and nothing against them (not: " + strings.Join(missing, ", ") + ")."
	}
	return "(D) The submission does not state the expert answer's facts (" + strings.Join(missing, ", ") + ")."
}

// section is the text after marker up to the next line of asterisks.
func section(prompt, marker string) string {
	i := strings.Index(prompt, marker)
	if i < 0 {
		return ""
	}
	rest := prompt[i+len(marker):]
	if j := strings.Index(rest, "\n***"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest)
}

var wordRE = lazyre.New(`[A-Za-z0-9_]+(?:[-.][A-Za-z0-9_]+)*`)

func words(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range wordRE().FindAllString(s, -1) {
		k := stem(w)
		if len(k) > 3 && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// keyTerms are the words that carry facts: with a digit, an underscore, or two capitals.
func keyTerms(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range wordRE().FindAllString(s, -1) {
		caps := 0
		for _, r := range w {
			if r >= 'A' && r <= 'Z' {
				caps++
			}
		}
		if !strings.ContainsAny(w, "0123456789_") && caps < 2 {
			continue
		}
		if k := stem(w); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// stem folds case and a plural "s" (HCAs, NICs).
func stem(w string) string {
	w = strings.ToLower(w)
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w = w[:len(w)-1]
	}
	return w
}

func containsWord(clause, term string) bool {
	for _, w := range wordRE().FindAllString(clause, -1) {
		if stem(w) == term {
			return true
		}
	}
	return false
}

var clauseSplit = lazyre.New(`[.;!?]\s+|[.;!?]$|\s+but\s+`)

func clauses(s string) []string {
	return clauseSplit().Split(strings.Join(strings.Fields(s), " "), -1)
}

var negation = lazyre.New(`(?i)\b(?:not|no|never|cannot|neither|nor|none|disabled?|unnecessary|unneeded|irrelevant|unrelated|instead of|rather than|false|myth)\b|n't\b`)

func negated(clause string) bool { return negation().MatchString(clause) }

func negatedIn(cs []string, term string) bool {
	for _, c := range cs {
		if containsWord(c, term) && negated(c) {
			return true
		}
	}
	return false
}
