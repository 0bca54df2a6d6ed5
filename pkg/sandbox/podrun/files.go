package podrun

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultClusterDomain is the kubelet's usual --cluster-domain.
const DefaultClusterDomain = "cluster.local"

// HostEntry is another pod of the cluster as /etc/hosts lists it: what cluster DNS would answer.
type HostEntry struct {
	IP        string
	Hostname  string // pod.spec.hostname, or the pod's name
	Subdomain string // pod.spec.subdomain (the headless Service)
	Namespace string
}

// PodHostEntry is the HostEntry of pod at ip, named as the kubelet names it.
func PodHostEntry(pod *corev1.Pod, ip string) HostEntry {
	return HostEntry{IP: ip, Hostname: Hostname(pod), Subdomain: pod.Spec.Subdomain, Namespace: pod.Namespace}
}

// Hostname is the hostname a kubelet gives pod: spec.hostname, else its name, cut to 63
// characters and then stripped of trailing '-' and '.' (k8s.io/kubernetes v1.37
// pkg/kubelet/kubelet_pods.go GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded).
func Hostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// hostDomain is "<subdomain>.<namespace>.svc.<clusterDomain>", empty without a subdomain.
func hostDomain(subdomain, namespace, clusterDomain string) string {
	if subdomain == "" {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", subdomain, namespace, clusterDomain)
}

// searchPath is resolv.conf's search list for a ClusterFirst pod in namespace (pkg/kubelet/
// network/dns/dns.go generateSearchesForDNSClusterFirst, without the node's own searches).
func searchPath(namespace, clusterDomain string) []string {
	return []string{namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
}

// hostsFile is /etc/hosts as the kubelet writes it for a pod off the host network
// (kubelet_pods.go managedHostsFileContent: the header, the localhost lines, then
// "IP\thostname.domain\thostname"), followed by the other pods under every name by which
// cluster DNS would resolve them from this pod: the FQDN and what it is short of each search
// domain ("h.sub" from the same namespace). Those lines stand in for cluster DNS where a caller
// has none (Spec.Hosts); glibc reads /etc/hosts before DNS (nsswitch "files dns") but does not
// apply the search list to it, hence the short forms.
func hostsFile(self HostEntry, others []HostEntry, clusterDomain string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	if d := hostDomain(self.Subdomain, self.Namespace, clusterDomain); d != "" {
		fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", self.IP, self.Hostname, d, self.Hostname)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", self.IP, self.Hostname)
	}
	if len(others) == 0 {
		return b.String()
	}
	b.WriteString("\n# Other pods: a stand-in for cluster DNS (podrun).\n")
	search := searchPath(self.Namespace, clusterDomain)
	for _, o := range others {
		d := hostDomain(o.Subdomain, o.Namespace, clusterDomain)
		if d == "" {
			continue // only pods under a headless Service have DNS names of their own
		}
		fqdn := o.Hostname + "." + d
		names := []string{fqdn}
		for _, s := range search {
			if short, ok := strings.CutSuffix(fqdn, "."+s); ok {
				names = append(names, short)
			}
		}
		fmt.Fprintf(&b, "%s\t%s\n", o.IP, strings.Join(names, "\t"))
	}
	return b.String()
}

// resolvConf is a ClusterFirst pod's /etc/resolv.conf (dns.go: nameserver, search, options
// ndots:5).
func resolvConf(nameserver, namespace, clusterDomain string) string {
	return fmt.Sprintf("nameserver %s\nsearch %s\noptions ndots:5\n", nameserver, strings.Join(searchPath(namespace, clusterDomain), " "))
}
