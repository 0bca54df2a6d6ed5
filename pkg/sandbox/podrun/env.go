package podrun

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// expand replaces $(NAME) in s by NAME's value where lookup knows it, leaves an unknown
// $(NAME) as it is, and reduces $$ to $: the rules of a container's env values, command and
// args (Kubernetes API reference, EnvVar.value and Container.command).
func expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// fieldValue is a downward-API field of the pod, as the kubelet resolves fieldRef
// (pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue).
func fieldValue(pod *corev1.Pod, podIP, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, nil
	}
	for _, p := range []struct {
		prefix string
		m      map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if strings.HasPrefix(path, p.prefix) && strings.HasSuffix(path, "']") {
			return p.m[strings.TrimSuffix(strings.TrimPrefix(path, p.prefix), "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// containerEnv is the environment of the container's process: the image's variables, HOSTNAME
// (set by the container runtime), envFrom, then env in order with $(VAR) expanded from what
// comes before, then HOME from the image's /etc/passwd for uid when nothing set it (containerd
// and runc do that).
func containerEnv(pod *corev1.Pod, c *corev1.Container, img Image, podIP, hostname string, uid int64, src sources) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range img.env() {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	set("HOSTNAME", hostname)
	for _, ef := range c.EnvFrom {
		kind, name, optional := "secret", "", (*bool)(nil)
		if r := ef.SecretRef; r != nil {
			name, optional = r.Name, r.Optional
		} else if r := ef.ConfigMapRef; r != nil {
			kind, name, optional = "configmap", r.Name, r.Optional
		}
		data, err := src.get(kind, name, optional)
		if err != nil {
			return nil, fmt.Errorf("envFrom: %w", err)
		}
		for _, k := range sortedKeys(data) {
			set(ef.Prefix+k, string(data[k]))
		}
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	for _, e := range c.Env {
		v := expand(e.Value, lookup)
		if from := e.ValueFrom; from != nil {
			var err error
			switch {
			case from.FieldRef != nil:
				v, err = fieldValue(pod, podIP, from.FieldRef.FieldPath)
			case from.SecretKeyRef != nil:
				v, err = keyRef(src, "secret", from.SecretKeyRef.Name, from.SecretKeyRef.Key, from.SecretKeyRef.Optional)
			case from.ConfigMapKeyRef != nil:
				v, err = keyRef(src, "configmap", from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, from.ConfigMapKeyRef.Optional)
			default:
				err = fmt.Errorf("env %s: only fieldRef, secretKeyRef and configMapKeyRef run for real so far", e.Name)
			}
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		set(e.Name, v)
	}
	if _, ok := vals["HOME"]; !ok {
		set("HOME", homeOf(uid))
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

// keyRef is one key of a Secret or ConfigMap; an absent object or key is an error unless optional.
func keyRef(src sources, kind, name, key string, optional *bool) (string, error) {
	data, err := src.get(kind, name, optional)
	if err != nil {
		return "", err
	}
	v, ok := data[key]
	if !ok && (optional == nil || !*optional) {
		return "", fmt.Errorf("%s %q has no key %q", kind, name, key)
	}
	return string(v), nil
}

// homeOf is uid's home folder in this machine's /etc/passwd (the "image"), "/" when absent.
func homeOf(uid int64) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "/"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && fields[2] == strconv.FormatInt(uid, 10) {
			return fields[5]
		}
	}
	return "/"
}
