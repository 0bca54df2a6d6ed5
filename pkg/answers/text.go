package answers

import (
	"fmt"
	"io"
)

// WriteText writes a case's verdict and, per check, what it found: the excerpt that matched,
// or the failure with its evidence.
func (r QAResult) WriteText(w io.Writer) {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	how := map[string]string{"choice": "multiple choice", "judge": "judged", "embeddings": "embeddings", "keywords": "keywords: smoke test only"}[r.Method]
	if len(r.Samples) > 1 {
		fmt.Fprintf(w, "%s  %s  [%s]  (%d/%d samples passed)\n", verdict, r.Name, how, r.Passed, len(r.Samples))
	} else {
		fmt.Fprintf(w, "%s  %s  [%s]\n", verdict, r.Name, how)
	}
	if !r.Pass {
		fmt.Fprintf(w, "      question: %s\n", r.Question)
		if r.Error == "" {
			fmt.Fprintf(w, "      answer:   %s\n", oneLineText(r.Answer, 300))
		}
		for _, f := range r.Failures {
			fmt.Fprintf(w, "      - %s\n", f)
		}
		return
	}
	if len(r.Samples) > 0 {
		for _, ck := range r.Samples[0].Checks {
			if ck.Kind == "forbidden" {
				continue
			}
			fmt.Fprintf(w, "      %s %s: %s\n", ck.Kind, ck.Expect, oneLineText(ck.Evidence, 120))
		}
	}
}

// WriteText lists, answer by answer, what changed since the archive.
func (cmp *QAComparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\ncompared with %s (model %s, %s): %d of %d answers differ, %d changed\n", cmp.Archive, cmp.ModelBefore,
		cmp.ArchiveDate.Format("2006-01-02 15:04 MST"), cmp.Changed, len(cmp.Changes), cmp.Regressions)
	for _, ch := range cmp.Changes {
		if ch.Status == ChangeSame {
			continue
		}
		mark := "  "
		if ch.Regression {
			mark = "! "
		}
		fmt.Fprintf(w, "%s%s  %s\n", mark, ch.Status, ch.Name)
		if ch.Before != "" {
			fmt.Fprintf(w, "      before: %s\n", oneLineText(ch.Before, 200))
		}
		if ch.After != "" {
			fmt.Fprintf(w, "      now:    %s\n", oneLineText(ch.After, 200))
		}
		if ch.Verdict != "" {
			fmt.Fprintf(w, "      %s\n", oneLineText(ch.Verdict, 200))
		}
	}
}

// WriteText writes the run's summary (the cases were written as they ran): the pass rate
// against --min-pass, the sampling, what keyword checks are worth, the comparison with the
// archive and where the answers were archived.
func (o *CheckOutcome) WriteText(w io.Writer) {
	rep := o.QAReport
	smoke := 0
	for _, r := range rep.Results {
		if r.Method == "keywords" {
			smoke++
		}
	}
	verdict := "OK"
	if !rep.OK {
		verdict = "FAILED"
	}
	sampling := fmt.Sprintf("temperature %g, seed %d", rep.Temperature, QASeed)
	if rep.Samples > 1 {
		sampling = fmt.Sprintf("%d samples at temperature %g (seeds %d..%d), a case passes with %.0f%% of them", rep.Samples, rep.Temperature, QASeed, QASeed+rep.Samples-1, rep.PassThreshold*100)
	}
	if rep.Judge != "" {
		sampling += fmt.Sprintf(", %s %s", rep.Semantic, rep.Judge)
	}
	fmt.Fprintf(w, "\n%d/%d passed (%.0f%%), --min-pass %.0f%%: %s  [model %s, %s]\n",
		rep.Passed, rep.Total, rep.PassRate*100, rep.MinPass*100, verdict, rep.Model, sampling)
	if smoke > 0 {
		fmt.Fprintf(w, "%d of the %d cases are keyword checks, a smoke test only: keywords cannot tell a statement from its negation.\n", smoke, rep.Total)
	}
	if o.Comparison != nil {
		o.Comparison.WriteText(w)
	}
	if o.Saved != "" {
		fmt.Fprintf(w, "answers archived in %s (compare a later run with --compare %s)\n", o.Saved, o.Saved)
	}
}
