package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ain-hpc/ain/pkg/userdir"
)

// DefaultCacheTTL is how long a passing result is reused by `ain train`/`ain bench`.
const DefaultCacheTTL = 5 * time.Minute

// Cache keeps passing results for a short while, one file per cluster + namespace + profile +
// recipe shape, so repeated commands are not slowed by the probes. Failing results are never
// cached: after a fix the next command checks again.
type Cache struct {
	Dir string
	TTL time.Duration
	Now func() time.Time
}

// CacheDir is $XDG_CACHE_HOME/ain/preflight, else ~/.cache/ain/preflight.
func CacheDir(getenv func(string) string) string {
	if d, err := userdir.Cache(getenv, "preflight"); err == nil {
		return d
	}
	return filepath.Join(os.TempDir(), "ain-preflight")
}

// Key identifies what a result is valid for.
func Key(o Options) string {
	o.defaults()
	spec, _ := json.Marshal(o.Profile.Spec)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%s\x00%s\x00%v\x00%s\x00%s\x00%v\x00%v", o.Cluster, o.User, o.Namespace, spec, o.Nodes, o.GPUsPerNode, o.NodeSelector, o.Job, o.SkipProbes, o.Workload, o.API, o.Arches, o.Volumes)
	if len(o.Storage.Paths) > 0 {
		st, _ := json.Marshal(o.Storage)
		h.Write(st)
	}
	if o.Tools.Image != "" {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%q\x00%q", o.Tools.Image, o.ImagePullPolicy, o.Tools.Commands, o.Tools.Modules)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

type cached struct {
	SavedAt time.Time `json:"savedAt"`
	Result  *Result   `json:"result"`
}

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key+".json") }

func (c Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Load returns a result saved under key less than TTL ago.
func (c Cache) Load(key string) (*Result, time.Duration, bool) {
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil, 0, false
	}
	var e cached
	if json.Unmarshal(data, &e) != nil || e.Result == nil {
		return nil, 0, false
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	age := c.now().Sub(e.SavedAt)
	if age < 0 || age > ttl || e.Result.Failed() {
		return nil, 0, false
	}
	e.Result.Cached = true
	e.Result.Kind = Kind // saved by an ain that wrote no kind
	return e.Result, age, true
}

// Save stores a result that has no FAIL; failing results remove the entry.
func (c Cache) Save(key string, r *Result) error {
	if r.Failed() {
		err := os.Remove(c.path(key))
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(cached{SavedAt: c.now(), Result: r})
	if err != nil {
		return err
	}
	tmp := c.path(key) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path(key))
}

// PurgeCluster removes every cached result for the cluster at server (the API server URL a
// result records), e.g. when `ain sandbox down --purge` deletes that cluster: its port may be
// reused by the next sandbox, whose nodes the old PASS says nothing about. It returns how many
// entries it removed; a missing cache folder is no error.
func (c Cache) PurgeCluster(server string) (int, error) {
	if server == "" {
		return 0, nil
	}
	names, err := filepath.Glob(filepath.Join(c.Dir, "*.json"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		var e cached
		if json.Unmarshal(data, &e) != nil || e.Result == nil || e.Result.Cluster != server {
			continue
		}
		if err := os.Remove(name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
