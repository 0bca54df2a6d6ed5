package jobs

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// View prints a job's progress to W: on a terminal (TTY) a live block redrawn every second and on
// every change, otherwise one line per change. Update is a watch's OnChange; Stop ends the redraws.
type View struct {
	w        io.Writer
	tty      bool
	now      func() time.Time
	start    time.Time
	mu       sync.Mutex
	last     *Snapshot
	lines    int
	podKeys  map[string]string
	ranks    map[string]string // pod name -> its rank (ReplicaLabel), for every pod in the job
	departed map[string]string // rank -> the pod that left it, until another takes its place
	gone     []string          // what happened to pods that left the job while it ran
	notes    []string          // the last Note's lines, shown under the table on a terminal
	width    int               // the terminal's columns (0: unknown): redrawn lines are cut to it
	phase    string
	done     chan struct{}
	once     sync.Once
}

// NewView starts a view of a job submitted at start; now is the clock.
func NewView(w io.Writer, tty bool, now func() time.Time, start time.Time) *View {
	v := &View{w: w, tty: tty, now: now, start: start, podKeys: map[string]string{}, ranks: map[string]string{}, departed: map[string]string{}, done: make(chan struct{})}
	if tty {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-v.done:
					return
				case <-t.C:
					v.mu.Lock()
					v.redraw()
					v.mu.Unlock()
				}
			}
		}()
	}
	return v
}

// Stop ends the redraws (idempotent).
func (v *View) Stop() { v.once.Do(func() { close(v.done) }) }

// Update shows s.
func (v *View) Update(s Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = &s
	left := v.departures(s)
	v.gone = append(v.gone, left...)
	if v.tty {
		v.redraw()
		return
	}
	el := Clock(v.now().Sub(v.start))
	for _, l := range left {
		fmt.Fprintf(v.w, "%s    %s\n", el, l)
	}
	if s.Phase+s.Message != v.phase {
		v.phase = s.Phase + s.Message
		msg := ""
		if s.Message != "" {
			msg = ": " + s.Message
		}
		fmt.Fprintf(v.w, "%s  %s %s/%s %s%s\n", el, s.Kind, s.Namespace, s.Name, s.Phase, msg)
	}
	for _, p := range s.Pods {
		k := fmt.Sprintf("%s %s %v %d %s %s", p.Phase, p.Node, p.Ready, p.Restarts, p.State, p.Why)
		if v.podKeys[p.Name] == k {
			continue
		}
		v.podKeys[p.Name] = k
		fmt.Fprintf(v.w, "%s    %s\n", el, podLine(p))
	}
}

// departures says which pods seen before left the job while it ran, and which new pod took a
// departed one's rank (the operator replaced it): a rank's pod that vanishes mid-run is worth a
// line, not silence. Once the job has ended its pods go by design (clean-pod policy): not said.
func (v *View) departures(s Snapshot) []string {
	now := map[string]bool{}
	for _, p := range s.Pods {
		now[p.Name] = true
	}
	var out []string
	for name, rank := range v.ranks {
		if now[name] {
			continue
		}
		delete(v.ranks, name)
		delete(v.podKeys, name)
		if !Terminal(s.Phase) {
			v.departed[rank] = name
			out = append(out, fmt.Sprintf("%s (%s) left the job: deleted or evicted", name, rank))
		}
	}
	slices.Sort(out)
	for _, p := range s.Pods {
		rank := ReplicaLabel(p)
		if _, seen := v.ranks[p.Name]; !seen {
			if old, ok := v.departed[rank]; ok {
				delete(v.departed, rank)
				out = append(out, fmt.Sprintf("%s replaces %s as %s", p.Name, old, rank))
			}
		}
		v.ranks[p.Name] = rank
	}
	return out
}

// SetWidth gives the terminal's width: each redrawn line is cut to it, so that the cursor moves
// back over exactly the rows drawn (a line that wraps takes two, and the block would scroll).
func (v *View) SetWidth(columns int) {
	v.mu.Lock()
	v.width = columns
	v.mu.Unlock()
}

// maxNotes bounds the note lines under the live table: a 64-rank job's lines would not fit a
// terminal, and the cursor cannot move above its top.
const maxNotes = 12

// Note shows lines beside the job's state (the GPU metrics of its ranks): on a terminal under the
// table, replacing the last note; otherwise printed once with the elapsed time.
func (v *View) Note(lines []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tty {
		v.notes = slices.Clone(lines)
		if len(v.notes) > maxNotes { // the first ranks, a count, and the last line (the verdict)
			n := len(v.notes)
			v.notes = append(v.notes[:maxNotes-2:maxNotes-2], fmt.Sprintf("... %d more lines (without a terminal every line is printed)", n-maxNotes+1), lines[n-1])
		}
		v.redraw()
		return
	}
	el := Clock(v.now().Sub(v.start))
	for _, l := range lines {
		fmt.Fprintf(v.w, "%s    %s\n", el, l)
	}
}

func podLine(p PodInfo) string {
	s := fmt.Sprintf("%s: %s", p.Name, p.Phase)
	if p.Node != "" {
		s += " on " + p.Node
	}
	if p.Ready {
		s += ", ready"
	}
	if p.Restarts > 0 {
		s += fmt.Sprintf(", %d restarts", p.Restarts)
	}
	if p.Why != "" {
		s += " (" + p.Why + ")"
	}
	return s
}

func (v *View) redraw() {
	s := v.last
	if s == nil {
		return
	}
	if v.lines > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.lines)
	}
	now := v.now()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%s  %s  %s\n", s.Kind, s.Namespace, s.Name, s.Phase, Clock(now.Sub(v.start)))
	if s.Message != "" && len(s.Pods) == 0 {
		fmt.Fprintf(&b, "  %s\n", s.Message)
	}
	fmt.Fprintf(&b, "  %-12s %-32s %-10s %-14s %-8s %s\n", "REPLICA", "POD", "PHASE", "NODE", "RESTARTS", "AGE")
	for _, p := range s.Pods {
		ph := p.Phase
		if p.Ready {
			ph += "*"
		}
		a := "-"
		if !p.Started.IsZero() {
			a = Age(now.Sub(p.Started))
		}
		fmt.Fprintf(&b, "  %-12s %-32s %-10s %-14s %-8d %s\n", ReplicaLabel(p), p.Name, ph, p.Node, p.Restarts, a)
		if p.Why != "" {
			fmt.Fprintf(&b, "      %s\n", p.Why)
		}
	}
	for _, g := range v.gone[max(0, len(v.gone)-5):] { // the last few: the table must fit
		fmt.Fprintf(&b, "  %s\n", g)
	}
	for _, n := range v.notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	out := b.String()
	if v.width > 0 {
		out = cutLines(out, v.width-1)
	}
	v.lines = strings.Count(out, "\n")
	fmt.Fprint(v.w, out)
}

// cutLines cuts each line of s to at most n runes, ending a cut one with "~".
func cutLines(s string, n int) string {
	if n < 2 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		if r := []rune(body); len(r) > n {
			lines[i] = string(r[:n-1]) + "~" + l[len(body):]
		}
	}
	return strings.Join(lines, "")
}
