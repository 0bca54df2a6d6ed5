// Package sandboxtest gives a package's integration tests one shared sandbox (see pkg/sandbox):
// started on first use, reused by every test of the test binary, and stopped at the end, every
// process by its pid. Components are started with Pdeathsig, so even a test binary killed by
// -timeout or a signal leaves nothing running; an interrupt stops the sandbox cleanly.
//
// Use:
//
//	func TestMain(m *testing.M) { sandboxtest.Main(m, sandbox.Config{Nodes: 3}) }
//
//	func TestSomething(t *testing.T) {
//		sb := sandboxtest.Get(t)            // skips under -short; fails if the sandbox cannot start
//		ns := sb.Namespace(t)                // a fresh namespace, deleted after the test
//		cs := sb.Clientset(t)
//		...
//	}
//
// Config.Stack chooses the job controllers: the zero value is sandbox.DefaultStack (the current
// stack: mpi-operator, JobSet, Trainer v2); tests of kubeflow.org/v1 jobs ask for
// sandbox.StackLegacy (the training-operator). A test binary has one sandbox, so one stack.
//
// The binaries are built on first use into the shared cache (sandbox.CacheDir): allow for it
// with `go test -timeout 60m` on a fresh machine, or build them first with `ain sandbox build`.
package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/testenv"
)

// Sandbox is the running shared sandbox.
type Sandbox struct {
	Dir        string // state folder (a temporary folder, removed at the end)
	Kubeconfig string
	State      *sandbox.State
	REST       *rest.Config
}

var shared struct {
	sync.Mutex
	cfg     sandbox.Config
	sb      *Sandbox
	err     error
	started bool
	dir     string
}

// Main runs the package's tests with cfg as the shared sandbox's configuration and stops the
// sandbox afterwards. When the test binary is re-executed as the sandbox agent (the sandbox
// starts it that way) it runs the agent instead.
func Main(m *testing.M, cfg sandbox.Config) {
	if os.Getenv("AIN_SANDBOX_AGENT") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := sandbox.RunAgent(ctx, os.Getenv("AIN_SANDBOX_STATE"), os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The agent above keeps the environment the sandbox gave it; the tests run isolated from the
	// machine (their own HOME and XDG folders, the shared binary cache pinned).
	cleanup, err := testenv.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		os.Exit(1)
	}
	defer cleanup()
	shared.cfg = cfg
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "sandboxtest: %v: stopping the sandbox\n", s)
		stopShared()
		os.Exit(130)
	}()
	code := m.Run()
	if code != 0 {
		shared.Lock()
		if shared.sb != nil {
			shared.sb.Diagnose(context.Background(), os.Stderr)
		}
		shared.Unlock()
	}
	stopShared()
	cleanup()
	os.Exit(code)
}

func stopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.dir == "" {
		return
	}
	if err := sandbox.Down(context.Background(), shared.dir, true, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxtest: stopping the sandbox: %v\n", err)
	}
	shared.dir = ""
}

// Get returns the shared sandbox, starting it on first use. Under -short it skips the test; when
// the sandbox cannot be built or started it fails the test with the reason (never skips).
func Get(t testing.TB) *Sandbox {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local sandbox (run without -short)")
	}
	shared.Lock()
	defer shared.Unlock()
	if !shared.started {
		shared.started = true
		shared.sb, shared.err = start()
	}
	if shared.err != nil {
		t.Fatalf("the sandbox for integration tests could not start: %v", shared.err)
	}
	return shared.sb
}

func start() (*Sandbox, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cache, err := sandbox.CacheDir(nil)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ain-sandboxtest-")
	if err != nil {
		return nil, err
	}
	shared.dir = dir
	t0 := time.Now()
	st, _, err := sandbox.Up(context.Background(), sandbox.Options{
		Dir: dir, Cache: cache, Config: shared.cfg, Out: &lineWriter{prefix: "sandboxtest: "},
		AgentCommand: []string{exe}, DieWithParent: true,
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "sandboxtest: sandbox up in %s (%s)\n", time.Since(t0).Round(100*time.Millisecond), dir)
	cfg, err := sandbox.RESTConfigFor(dir)
	if err != nil {
		return nil, err
	}
	return &Sandbox{Dir: dir, Kubeconfig: st.Kubeconfig, State: st, REST: cfg}, nil
}

type lineWriter struct{ prefix string }

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		fmt.Fprintln(os.Stderr, w.prefix+line)
	}
	return len(p), nil
}

// Clientset returns a typed client for the sandbox's admin user.
func (s *Sandbox) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	return newClient(t, s.REST, kubernetes.NewForConfig)
}

// Dynamic returns a dynamic client for the sandbox's admin user.
func (s *Sandbox) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	return newClient(t, s.REST, dynamic.NewForConfig)
}

// newClient makes one of the sandbox's admin clients, failing the test when it cannot.
func newClient[C any](t testing.TB, cfg *rest.Config, newForConfig func(*rest.Config) (C, error)) C {
	t.Helper()
	c, err := newForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ServiceAccountKubeconfig writes a kubeconfig (in the test's temporary folder) that acts as
// ServiceAccount sa of namespace ns with a real token from the TokenRequest API (valid one
// hour), and returns its path: what a user given only that account's rights would run ain with.
func (s *Sandbox) ServiceAccountKubeconfig(t testing.TB, ns, sa string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := s.Clientset(t).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil || tr.Status.Token == "" {
		t.Fatalf("token request for %s/%s: %v", ns, sa, err)
	}
	admin, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: sa, Namespace: ns}
	kc.CurrentContext = sa
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Namespace creates a namespace for this test, deleted when the test ends.
func (s *Sandbox) Namespace(t testing.TB) string {
	t.Helper()
	cs := s.Clientset(t)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// ComponentLog returns the last lines of a component's log (for failure messages).
func (s *Sandbox) ComponentLog(name string, lines int) string {
	data, err := os.ReadFile(filepath.Join(sandbox.Layout{Dir: s.Dir}.Logs(), name+".log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// UseScenario switches the shared sandbox to scenario name for this test (pods created from now
// on follow it; nodes are updated) and switches back when the test ends. Tests using it must not
// run in parallel with other sandbox tests.
func (s *Sandbox) UseScenario(t testing.TB, name string) {
	t.Helper()
	prev := s.State.Config.Scenario
	if err := sandbox.SetScenario(context.Background(), s.Dir, name); err != nil {
		t.Fatalf("scenario %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := sandbox.SetScenario(context.Background(), s.Dir, prev); err != nil {
			t.Errorf("restoring scenario %s: %v", prev, err)
		}
	})
}
