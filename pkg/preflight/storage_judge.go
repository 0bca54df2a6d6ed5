package preflight

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// JudgeStorage turns the probe's report into one check per path: the model directory complete
// and readable, the dataset there, the output writable with free space. Each non-PASS check
// names the claim and the path, and says how to fix it. claim maps each path to the recipe
// volume holding it.
func JudgeStorage(rep *StorageReport, paths []recipe.DataPath, claim map[string]*recipe.Volume) []Check {
	as := "uid " + orDash(rep.UID)
	if rep.GID != "" {
		as += " gid " + rep.GID
	}
	var out []Check
	for _, dp := range paths {
		v := claim[dp.Path]
		if v == nil {
			continue
		}
		on := fmt.Sprintf("on claim %s (volume %q at %s)", v.ClaimName, v.Name, v.MountPath)
		c := Check{Name: CheckModel, Target: v.ClaimName + ":" + dp.Path, Status: Pass}
		p := rep.Find(string(dp.Kind), dp.Path)
		if p == nil {
			c.Status = Fail
			c.Message = fmt.Sprintf("%s %s %s: the probe stopped before it", dp.Kind, dp.Path, on)
			c.Fix = "run it again; if it repeats, the volume hangs (a stale NFS mount): kubectl describe pod of a rank"
			c.Next = []next.Command{"preflight"}
			out = append(out, c)
			continue
		}
		switch dp.Kind {
		case recipe.DataModel:
			judgeModel(&c, p, dp, v, on, as)
		case recipe.DataDataset:
			judgeDataset(&c, p, dp, on, as)
		case recipe.DataOutput:
			judgeOutput(&c, p, dp, v, on, as)
		}
		if c.Read != nil {
			c.Read.Sandbox = rep.Sandbox
		}
		out = append(out, c)
	}
	return out
}

func judgeModel(c *Check, p *StoragePath, dp recipe.DataPath, v *recipe.Volume, on, as string) {
	problems, found := ModelProblems(p)
	if p.ReadTested {
		c.Read = modelRead(p, v.ClaimName)
		c.Evidence = append(c.Evidence, c.Read.String())
	}
	if len(problems) == 0 {
		c.Message = fmt.Sprintf("model %s %s: complete and readable as %s: %s", dp.Path, on, as, found)
		if c.Read != nil {
			c.Message += "; " + c.Read.String()
		}
		return
	}
	c.Status = Fail
	if len(problems) == 1 && strings.HasSuffix(problems[0], "were not checked") {
		c.Status = Warn // an index beyond the probe's bound: nothing found wrong
	}
	c.Message = fmt.Sprintf("model %s %s (%s): %s", dp.Path, on, dp.Field, strings.Join(problems, "; "))
	if found != "" {
		c.Evidence = append([]string{"found: " + found}, c.Evidence...)
	}
	all := strings.Join(problems, " ")
	var fixes []string
	if p.Type != "d" {
		fixes = append(fixes, fmt.Sprintf("copy the model there from a pod that mounts claim %s (e.g. `hf download ORG/MODEL --local-dir %s`), or fix %s", v.ClaimName, dp.Path, dp.Field))
	}
	if strings.Contains(all, "missing") || strings.Contains(all, "no weights") || strings.Contains(all, "no tokenizer") || strings.Contains(all, "JSON") {
		fixes = append(fixes, fmt.Sprintf("finish the copy: download the model again into %s (`hf download ORG/MODEL --local-dir %s` fills in missing files)", dp.Path, dp.Path))
	}
	if strings.Contains(all, "Git LFS") {
		fixes = append(fixes, "the model was cloned without its LFS objects: run `git lfs pull` in "+dp.Path+", or download it with `hf download`")
	}
	if strings.Contains(all, "not readable") {
		fixes = append(fixes, fmt.Sprintf("make the files readable by %s: chmod -R a+rX %s where the volume is exported (NFS root_squash maps root to nobody), or set the job's runAsUser/fsGroup to their owner", as, dp.Path))
	}
	if len(fixes) == 0 {
		fixes = append(fixes, "check the model directory "+dp.Path+" against its source")
	}
	c.Fix = strings.Join(fixes, "; ")
}

func judgeDataset(c *Check, p *StoragePath, dp recipe.DataPath, on, as string) {
	fix := fmt.Sprintf("copy the dataset to %s on the volume, or fix %s", dp.Path, dp.Field)
	switch {
	case p.Type == "-":
		c.Status, c.Message, c.Fix = Fail, fmt.Sprintf("dataset %s %s (%s) does not exist", dp.Path, on, dp.Field), fix
	case p.Type == "d" && !p.Listable:
		c.Status, c.Message = Fail, fmt.Sprintf("dataset directory %s %s is not readable as %s", dp.Path, on, as)
		c.Fix = "chmod -R a+rX " + dp.Path + " where the volume is exported, or run the job as the files' owner"
	case p.Type == "d" && p.Count == 0:
		c.Status, c.Message, c.Fix = Fail, fmt.Sprintf("dataset directory %s %s is empty", dp.Path, on), fix
	case p.Type == "f" && (len(p.Entries) == 0 || !p.Entries[0].Readable):
		c.Status, c.Message = Fail, fmt.Sprintf("dataset file %s %s is not readable as %s", dp.Path, on, as)
		c.Fix = "chmod a+r " + dp.Path + " where the volume is exported"
	case p.Type == "d":
		c.Message = fmt.Sprintf("dataset %s %s: a directory of %d entries, readable as %s", dp.Path, on, p.Count, as)
	default:
		c.Message = fmt.Sprintf("dataset %s %s: a file, readable as %s", dp.Path, on, as)
	}
}

func judgeOutput(c *Check, p *StoragePath, dp recipe.DataPath, v *recipe.Volume, on, as string) {
	free := ""
	if p.HasDF {
		free = fmt.Sprintf("%s free of %s", humanBytes(p.AvailKB*1024), humanBytes(p.SizeKB*1024))
	}
	switch {
	case p.Type == "f" || p.Type == "o":
		c.Status, c.Message = Fail, fmt.Sprintf("output %s %s (%s) exists and is not a directory", dp.Path, on, dp.Field)
		c.Fix = "remove it or choose another " + dp.Field
	case p.Write != "ok":
		c.Status = Fail
		c.Message = fmt.Sprintf("output %s %s is not writable as %s: creating a file in %s: %s", dp.Path, on, as, orDash(p.Ancestor), orDash(p.Write))
		switch {
		case v.ReadOnly:
			c.Fix = fmt.Sprintf("the recipe mounts volume %q read-only: set its readOnly: false in spec.volumes, or write the output to another volume", v.Name)
		case strings.Contains(p.Write, "Read-only"):
			c.Fix = fmt.Sprintf("the volume of claim %s is read-only (a ReadOnlyMany claim, or an NFS export with ro): export it rw, or put the output on a writable claim", v.ClaimName)
		default:
			c.Fix = fmt.Sprintf("let %s write %s: chown or chmod it where the volume is exported (NFS root_squash maps root to nobody), or set the job's runAsUser/fsGroup to its owner", as, orDash(p.Ancestor))
		}
	case p.HasDF && p.AvailKB < failFreeKB:
		c.Status, c.Message = Fail, fmt.Sprintf("output %s %s: only %s", dp.Path, on, free)
		c.Fix = "free space on the volume (old checkpoints, merged models) or grow the claim"
	case p.HasDF && p.AvailKB < warnFreeKB:
		c.Status, c.Message = Warn, fmt.Sprintf("output %s %s: writable, but only %s: a merged 7B model needs ~15 GB", dp.Path, on, free)
		c.Fix = "free space on the volume or grow the claim"
	default:
		c.Message = fmt.Sprintf("output %s %s: writable as %s", dp.Path, on, as)
		if free != "" {
			c.Message += ", " + free
		}
	}
}

// ModelRead is the read throughput of a model's weight files as the storage probe measured it:
// one stream, files in name order, each by one dd of 16 MiB direct requests. Without readahead
// or parallel shards it is a lower bound of what a loader gets.
type ModelRead struct {
	Claim string `json:"claim"`
	Path  string `json:"path"`
	Node  string `json:"node,omitempty"` // where the probe ran
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Seconds is the sum of the files' read times (0: nothing timed).
	Seconds float64 `json:"seconds"`
	// Direct: every file was read with O_DIRECT, bypassing this node's page cache (a server's
	// cache may still have served it); otherwise some went through the page cache, which may
	// have held them from an earlier read.
	Direct bool `json:"direct"`
	// Untimed are files whose dd printed no transfer time (a busybox built without its rate line).
	Untimed []string `json:"untimed,omitempty"`
	// Cut is the file whose read the probe's time budget cut (--probe-timeout); Note says why
	// nothing was read.
	Cut  string `json:"cut,omitempty"`
	Note string `json:"note,omitempty"`
	// Sandbox: the probe ran in the ain sandbox, so the files read were its simulated volume
	// (sparse files on the machine's own disk), not a real one: the figure says nothing of a
	// cluster's storage.
	Sandbox bool `json:"sandbox,omitempty"`
}

// BytesPerSecond is the throughput; 0 when nothing was timed.
func (m *ModelRead) BytesPerSecond() float64 {
	if m.Seconds <= 0 {
		return 0
	}
	return float64(m.Bytes) / m.Seconds
}

func (m *ModelRead) String() string {
	var parts []string
	switch {
	case m.Seconds > 0:
		how := "O_DIRECT, bypassing this node's page cache"
		if !m.Direct {
			how = "through the page cache (the file system refused O_DIRECT): a file read before may have come from memory"
		}
		parts = append(parts, fmt.Sprintf("read %s of %d weight file(s) in %.2f s: %.2f GB/s (one stream of 16 MiB requests, %s; a lower bound of what a loader with readahead gets)",
			humanBytes(m.Bytes), m.Files, m.Seconds, m.BytesPerSecond()/1e9, how))
	case m.Note != "":
		parts = append(parts, "read test: nothing read: "+m.Note)
	default:
		parts = append(parts, "read test: nothing timed")
	}
	if len(m.Untimed) > 0 {
		parts = append(parts, "dd printed no transfer time for "+strings.Join(m.Untimed, ", ")+" (a busybox built without its rate line: give --probe-image an image with GNU coreutils or a stock busybox)")
	}
	if m.Cut != "" {
		parts = append(parts, "the read of "+m.Cut+" was cut at the probe's time budget (raise --probe-timeout to read more)")
	}
	return strings.Join(parts, "; ")
}

func modelRead(p *StoragePath, claim string) *ModelRead {
	m := &ModelRead{Claim: claim, Path: p.Path, Direct: true, Cut: p.Cut, Note: p.ReadNote}
	for _, r := range p.Reads {
		if r.Seconds <= 0 {
			m.Untimed = append(m.Untimed, orDash(r.Name))
			continue
		}
		m.Files++
		m.Bytes += r.Bytes
		m.Seconds += r.Seconds
		m.Direct = m.Direct && r.Direct
	}
	return m
}
