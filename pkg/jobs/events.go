package jobs

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventLine is one Kubernetes event about a job or one of its pods, as ain status shows it.
type EventLine struct {
	Time    string `json:"time"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Object  string `json:"object"`
	Message string `json:"message"`
}

// Events lists the last max events of the job and its pods, oldest first (one list call of
// the namespace's events, filtered here: events carry no job label). A failed list is no
// events: they explain, they are not the verdict.
func (c *Cluster) Events(ctx context.Context, job string, pods []corev1.Pod, max int) []EventLine {
	l, err := c.Kube.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	names := map[string]bool{job: true}
	for _, p := range pods {
		names[p.Name] = true
	}
	var evs []corev1.Event
	for _, e := range l.Items {
		if names[e.InvolvedObject.Name] {
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	if len(evs) > max {
		evs = evs[len(evs)-max:]
	}
	var out []EventLine
	for _, e := range evs {
		out = append(out, EventLine{Time: eventTime(e).UTC().Format("15:04:05"), Type: e.Type, Reason: e.Reason,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, Message: firstLine(e.Message)})
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
