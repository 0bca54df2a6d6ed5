package sandbox

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the status as `ain sandbox status` shows it: the settings, then a table of
// the processes and one of the nodes. partlyHint says what to do with a sandbox whose processes
// are only partly running (the caller knows its commands).
func (s *Status) WriteText(w io.Writer, partlyHint string) {
	state := "running"
	if !s.Running {
		state = "NOT running"
		if len(s.Components) > 0 {
			state = "partly running (" + partlyHint + ")"
		}
	}
	fmt.Fprintf(w, "Sandbox %s: %s\n", s.Dir, state)
	fmt.Fprintf(w, "  stack:      %s (%s)\n", s.Stack, strings.Join(s.APIs, ", "))
	fmt.Fprintf(w, "  scenario:   %s (%s)\n", s.Config.Scenario, s.Scenario)
	fmt.Fprintf(w, "  fabric:     %s, %d nodes x %d GPUs, %s: %d\n", s.Config.Fabric, s.Config.Nodes, s.Config.GPUsPerNode, s.Config.RDMAResource, s.Config.RDMACount)
	if s.RealPodsOff == "" {
		fmt.Fprintf(w, "  real pods:  on (the mapped images' pods run their real programs where they can; the table below says which did, and why not)\n")
	} else {
		fmt.Fprintf(w, "  real pods:  off: %s\n", or(s.RealPodsOff, RealPodsOffHint))
	}
	fmt.Fprintf(w, "  server:     %s\n  kubeconfig: %s\n", s.Server, s.Kubeconfig)
	switch {
	case len(s.Webhooks) > 0:
		for _, wh := range s.Webhooks {
			fmt.Fprintf(w, "  webhook:    %s %s -> %s\n", wh.Component, wh.Name, strings.Join(wh.URLs, ", "))
		}
	case s.Webhook.On:
		fmt.Fprintf(w, "  webhook:    on (%s)\n", s.Webhook.URL)
	default:
		fmt.Fprintf(w, "  webhook:    off: %s\n", s.Webhook.Reason)
	}
	for _, pf := range s.Config.PortForwards {
		fmt.Fprintf(w, "  forward:    pod port %d -> %s\n", pf.PodPort, pf.Target)
	}
	if len(s.Components) > 0 {
		fmt.Fprintln(w)
		s.writeComponents(w)
	}
	if len(s.Nodes) > 0 {
		fmt.Fprintln(w)
		s.writeNodes(w)
	} else if s.NodesError != "" {
		fmt.Fprintf(w, "\nnodes: %s\n", s.NodesError)
	}
	if len(s.PodRuns) > 0 {
		fmt.Fprintln(w)
		s.writePodRuns(w)
	} else if s.PodRunsError != "" {
		fmt.Fprintf(w, "\npods run: %s\n", s.PodRunsError)
	}
	fmt.Fprintf(w, "\nSimulated: %s\nComponent logs: %s\n", s.Simulated, s.Logs)
}

// writePodRuns says which pods ran real programs and which were simulated, and why: one row per
// image and reason, with a few of its pods.
func (s *Status) writePodRuns(w io.Writer) {
	real, failed, simulated := 0, 0, 0
	for _, g := range s.PodRuns {
		switch {
		case g.Real && g.Why == "":
			real += len(g.Pods)
		case g.Real:
			failed += len(g.Pods)
		default:
			simulated += len(g.Pods)
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "Pods so far: %d ran their real programs, %d could not start theirs, %d simulated\n", real, failed, simulated)
	} else {
		fmt.Fprintf(w, "Pods so far: %d ran their real programs, %d simulated\n", real, simulated)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RAN\tPODS\tIMAGE\tWHY\tFOR EXAMPLE")
	for _, g := range s.PodRuns {
		ran := "real"
		switch {
		case !g.Real:
			ran = "simulated"
		case g.Why != "":
			ran = "no start"
		}
		ex := g.Pods
		if len(ex) > 2 {
			ex = append(ex[:2:2], "...")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", ran, len(g.Pods), or(g.Image, "-"), or(g.Why, "-"), strings.Join(ex, " "))
	}
	tw.Flush()
}

func (s *Status) writeComponents(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tPID\tSTATE\tRSS\tPORTS (127.0.0.1)")
	for _, c := range s.Components {
		state := "running"
		if !c.Running {
			state = "stopped"
		}
		rss := "-"
		if c.RSSKiB > 0 {
			rss = fmt.Sprintf("%d MiB", c.RSSKiB/1024)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", c.Name, or(c.Version, "-"), c.PID, state, rss, portsString(c.Ports))
	}
	fmt.Fprintf(tw, "total\t\t\t\t%d MiB\t\n", s.TotalRSSKiB()/1024)
	tw.Flush()
}

func (s *Status) writeNodes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tREADY\tGPU\t%s\tCPU\tMEMORY\tEPHEMERAL\tPODS\tTAINTS\n", strings.ToUpper(s.Config.RDMAResource))
	for _, n := range s.Nodes {
		al := func(k string) string { return or(n.Allocatable[k], "0") }
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Ready, al("nvidia.com/gpu"), al(s.Config.RDMAResource),
			al("cpu"), al("memory"), al("ephemeral-storage"), al("pods"), or(strings.Join(n.Taints, ","), "-"))
	}
	tw.Flush()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func portsString(p map[string]int) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, p[k]))
	}
	return strings.Join(parts, " ")
}

// WriteUp writes what `ain sandbox up` says of the sandbox it started (or found running, when
// running): its stack, nodes and scenario, the job APIs, what is simulated, and how to use it.
// asked is the configuration asked for: a running sandbox started with other settings says so,
// with changeHint (the caller's command to change them).
func (st *State) WriteUp(w io.Writer, running bool, asked Config, changeHint string) {
	if running {
		fmt.Fprintf(w, "The sandbox is already running (started %s, %s stack, scenario %s, %d nodes).\n",
			st.StartedAt.Local().Format(time.RFC3339), st.Stack(), st.Config.Scenario, st.Config.Nodes)
		if st.Config.differs(asked) {
			fmt.Fprintf(w, "It was started with other settings than these; %s.\n", changeHint)
		}
	} else {
		fmt.Fprintf(w, "Sandbox ready: %s stack, %d simulated nodes, scenario %s, fabric %s.\n", st.Stack(), st.Config.Nodes, st.Config.Scenario, st.Config.Fabric)
	}
	fmt.Fprintf(w, "Job APIs served: %s.\n", strings.Join(st.Stack().APIs(), ", "))
	if !st.Webhook.On {
		fmt.Fprintf(w, "training-operator NOT running: %s\n", st.Webhook.Reason)
	}
	fmt.Fprintf(w, "Note: %s\n", simulatedNote(st))
}

// differs reports whether b asks for another sandbox than a (port-forwards aside: they change
// nothing the cluster serves).
func (c Config) differs(b Config) bool {
	return c.Nodes != b.Nodes || c.GPUsPerNode != b.GPUsPerNode || c.Fabric != b.Fabric || c.Scenario != b.Scenario ||
		c.RDMAResource != b.RDMAResource || c.RDMACount != b.RDMACount || c.Stack != b.Stack || c.SimulatePods != b.SimulatePods
}
