package vllm

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
)

// EventPrinter renders a Deployer's events as `ain serve` writes them (on stderr).
type EventPrinter struct {
	W io.Writer
	// DryRunServer says nothing is created: a missing TLS Secret would be.
	DryRunServer bool
	// KeyFile is where the generated API key was written ("": nowhere); TTY says W is a
	// terminal, where a generated key not written to a file is shown, once. Never in a log.
	KeyFile string
	TTY     bool
	// Namespace is the model server's, for the kubectl command that reads a key.
	Namespace string
	// Command is how a suggested command reads (the binary's name before it).
	Command func(next.Command) string
	// Applying, when set, is called when the objects are about to be sent.
	Applying func()
}

func (p *EventPrinter) cmd(c next.Command) string {
	if p.Command == nil {
		return string(c)
	}
	return p.Command(c)
}

// Event renders e.
func (p *EventPrinter) Event(e Event) {
	w := p.W
	switch e.Kind {
	case EventNote:
		fmt.Fprintf(w, "note: %s\n", e.Message)
	case EventWarning:
		fmt.Fprintf(w, "WARNING: %s\n", e.Message)
	case EventExpose:
		fmt.Fprintf(w, "expose: %s\n", e.Message)
	case EventIngressClassMissing:
		fmt.Fprintf(w, "WARNING: IngressClass %s does not exist: no controller will serve the Ingress, and it never gets an address (kubectl get ingressclass lists the cluster's; --set ingress.className=NAME, or --expose gateway)\n", e.Message)
	case EventUnauthenticated:
		fmt.Fprintln(w, "WARNING: --allow-unauthenticated: no API key; anyone who reaches the Service or the ingress can use the model and its GPUs")
	case EventTLS:
		p.tls(e)
	case EventApplying:
		if p.Applying != nil {
			p.Applying()
		}
	case EventApplied:
		fmt.Fprintf(w, "applied %s\n", e.Message)
	case EventKeyGenerated:
		p.revealKey(*e.Auth)
	case EventKeyDropFailed:
		fmt.Fprintf(w, "note: could not delete Secret %s, whose key no longer guards the server: %v\n", e.Message, e.Err)
	case EventKeyDropped:
		fmt.Fprintf(w, "deleted Secret %s: the server no longer requires its key\n", e.Message)
	case EventPruned:
		fmt.Fprintf(w, "pruned %s (this run no longer renders it)\n", e.Message)
	case EventWaiting:
		fmt.Fprintf(w, "[%s] %s\n", fmtElapsed(e.Elapsed), e.Message)
	default:
		fmt.Fprintln(w, e.Message)
	}
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// tls says what became of the entry's TLS Secret.
func (p *EventPrinter) tls(e Event) {
	w, t := p.W, e.TLS
	switch {
	case t == nil:
		fmt.Fprintf(w, "TLS: terminated by the listener of %s, whose certificate is that Gateway's (ain reads nor changes it)\n", e.Entry)
	case t.Issuer != "":
		fmt.Fprintf(w, "TLS: cert-manager ClusterIssuer %s issues Secret %s for %s\n", t.Issuer, t.Secret, e.Entry)
	case t.Created && p.DryRunServer:
		fmt.Fprintf(w, "TLS: Secret %s does not exist; ain would create a self-signed certificate\n", t.Secret)
	case t.Created:
		fmt.Fprintf(w, "TLS: created Secret %s with a self-signed certificate for %s; its CA is the Secret's ca.crt, which ain trusts when it finds the endpoint itself (others: kubectl get secret %s -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.pem; then --ca-file ca.pem)\n",
			t.Secret, orDash(t.For), t.Secret)
		if t.For == "" {
			fmt.Fprintf(w, "WARNING: no --host and no address for %s yet: the certificate names nothing a client connects to, so no client can verify it; pass --host NAME (a DNS name pointing at it), or once `%s` shows the address, delete Secret %s and re-run (ain then certifies the address)\n", e.Entry, p.cmd("serve status"), t.Secret)
		}
	default:
		fmt.Fprintf(w, "TLS: Secret %s holds a valid certificate for %s\n", t.Secret, orDash(e.Host))
	}
}

// revealKey tells the user the key ain generated, once: in KeyFile (written before the
// apply), else on a terminal, never into a log or a pipe.
func (p *EventPrinter) revealKey(auth Auth) {
	switch {
	case p.KeyFile != "":
		fmt.Fprintf(p.W, "API key: written to %s (mode 0600)\n", p.KeyFile)
	case p.TTY:
		fmt.Fprintf(p.W, "API key (shown once; %s read it from Secret %s themselves):\n  %s\n", p.cmd("models/chat"), auth.Secret.Name, auth.Generated)
	default:
		ns := ""
		if p.Namespace != "" {
			ns = " -n " + p.Namespace
		}
		fmt.Fprintf(p.W, "API key: not shown (stderr is not a terminal); %s read it from Secret %s; others: kubectl get secret %s%s -o jsonpath='{.data.%s}' | base64 -d\n",
			p.cmd("models/chat"), auth.Secret.Name, auth.Secret.Name, ns, auth.Secret.Key)
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// WriteReports writes each model server's state (`ain serve status`): replicas, entry, TLS,
// the probe of its endpoint, and its pods through table (a bordered table on a terminal,
// plain columns otherwise: the caller's choice).
func WriteReports(w io.Writer, reports []Report, table func(header []string, rows [][]string)) {
	for i, e := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		e.writeHead(w)
		var rows [][]string
		for _, r := range e.Replicas {
			for _, p := range r.Pods {
				ready := "no"
				if p.Ready {
					ready = "yes"
				}
				rows = append(rows, []string{r.Deployment, p.Name, p.Phase, ready, orDash(p.Node), fmt.Sprint(p.Restarts), orDash(p.Reason)})
			}
			if len(r.Pods) == 0 {
				rows = append(rows, []string{r.Deployment, "-", "no pods", "no", "-", "0", orDash(r.Stalled)})
			}
		}
		table([]string{"REPLICA", "POD", "PHASE", "READY", "NODE", "RESTARTS", "REASON"}, rows)
	}
}

// writeHead writes the lines above a report's table of pods.
func (e Report) writeHead(w io.Writer) {
	fmt.Fprintf(w, "%s: %d/%d replicas ready, model %s\n", e.Name, e.Ready, e.Desired, orDash(e.Model))
	if e.URL != "" {
		fmt.Fprintf(w, "  url:     %s\n", e.URL)
	}
	if e.Address != "" && !strings.Contains(e.URL, e.Address) {
		by := "the ingress controller"
		if e.Route != nil {
			by = "Gateway " + e.Route.Gateway
		}
		fmt.Fprintf(w, "  address: %s (published by %s)\n", e.Address, by)
	}
	if rt := e.Route; rt != nil {
		gw := "Gateway " + rt.Gateway
		if rt.Listener != "" {
			gw += " listener " + rt.Listener
		}
		if rt.OwnGateway {
			gw += ", created by ain"
		}
		fmt.Fprintf(w, "  route:   HTTPRoute %s on %s: Accepted %s, ResolvedRefs %s\n", rt.Name, gw, orDash(rt.Accepted), orDash(rt.ResolvedRefs))
		if rt.Problem != "" {
			state := "not serving"
			if rt.Pending {
				state = "not serving yet"
			}
			fmt.Fprintf(w, "  %s: %s\n", state, rt.Problem)
		}
	}
	if e.TLSSecret != "" {
		fmt.Fprintf(w, "  tls:     Secret %s\n", e.TLSSecret)
	}
	fmt.Fprintf(w, "  service: %s (in the cluster)\n", e.Service)
	if p := e.Probe; p != nil {
		if p.Error != "" {
			fmt.Fprintf(w, "  probe:   %s/models failed at %s: %s\n", p.Endpoint, p.At, p.Error)
		} else {
			fmt.Fprintf(w, "  probe:   %s/models lists %s (at %s)\n", p.Endpoint, strings.Join(p.Models, ", "), p.At)
		}
	}
}

// Left says what an interrupt left, for stderr: what exists and keeps running, then the
// commands (cmd formats one) that follow it and end it. "" for the stages whose error says it
// all (InterruptedBuilding, InterruptedBeforeApply). ns is the namespace flag's value ("" for
// none).
func (e *InterruptedError) Left(ns string, cmd func(next.Command) string) string {
	if ns != "" {
		ns = " -n " + ns
	}
	status, del := cmd(next.Command("serve status "+e.Name+ns)), cmd(next.Command("serve delete "+e.Name+ns))
	follow := fmt.Sprintf("Follow it: %s\nEnd it: %s\n", status, del)
	again := cmd("serve")
	switch e.Stage {
	case InterruptedApplyFinished:
		return fmt.Sprintf("\ninterrupted while applying: the apply was finished rather than left half-done (%d Deployment(s) and their Service exist); the model server keeps starting.\n%s", e.Total, follow)
	case InterruptedRolling:
		return fmt.Sprintf("\ninterrupted during the rolling update: %d of %d replica(s) have the new spec, the others keep the previous one and keep serving. `%s` again finishes the update.\n%s", e.Deployed, e.Total, again, follow)
	case InterruptedBeforeRolling:
		return fmt.Sprintf("\ninterrupted before the rolling update: the Service is applied, the %d existing Deployment(s) keep their previous spec and keep serving. `%s` again rolls them.\n%s", e.Existing, again, follow)
	case InterruptedFinishFailed:
		return fmt.Sprintf("\ninterrupted while applying, and finishing the apply failed (%v): the Service exists without its Deployments.\nRemove it: %s\n", e.FinishErr, del)
	case InterruptedFinished:
		return fmt.Sprintf("\ninterrupted while applying: the apply was finished rather than left half-done (a Service without its Deployments serves nothing); the model server keeps starting.\n%s", follow)
	}
	return ""
}

// WriteText says what a deployment (not a server dry run) came to, on log: ready, where and
// how it was checked, or with no wait (Endpoint empty) how to check it; the base URL clients
// use goes on out, unless only a port-forward that ends with the command reached it.
func (r *DeployResult) WriteText(out, log io.Writer, cmd func(next.Command) string) {
	if r.Endpoint == "" {
		fmt.Fprintf(log, "check it with: %s\n", cmd(next.Command("serve status "+r.Name)))
		return
	}
	fmt.Fprintf(log, "ready: %s serves %s (listed by /v1/models)\n", r.Endpoint, r.Model)
	if r.Via == "port-forward" {
		fmt.Fprintf(log, "(checked through a port-forward, which ends with this command; the ingress did not answer from here)\n")
		return
	}
	fmt.Fprintf(out, "%s\n", strings.TrimSuffix(r.Endpoint, "/v1"))
}
