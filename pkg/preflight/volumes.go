package preflight

import (
	"context"
	"errors"
	"fmt"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/claims"
)

// CheckVolumes is the check of the recipe's PersistentVolumeClaims (course 12.1: the shared
// volume with the model and the data).
const CheckVolumes = "volumes"

// checkVolumes reads the claims the recipe mounts: each must exist and not be Lost, and, when its
// ranks span nodes, be mountable by several nodes (ReadWriteMany or ReadOnlyMany). A Pending
// claim whose class binds immediately is a WARN (it may never bind); one that waits for its first
// consumer is expected. No claim read (RBAC): a WARN, the job itself does not need the right.
func checkVolumes(ctx context.Context, o Options) []Check {
	if len(o.Volumes) == 0 {
		return nil
	}
	sts, err := claims.Check(ctx, o.Kube, o.Namespace, o.Volumes, max(o.Nodes, 1), "ranks")
	var p *claims.Problem
	switch {
	case errors.As(err, &p):
		fix := "create it (or fix spec.volumes[].claimName): kubectl -n " + o.Namespace + " get pvc"
		if p.Lost {
			fix = "its PersistentVolume was deleted: restore it or recreate the claim, then copy the model and data back"
		} else if !p.Missing {
			fix = "use a ReadWriteMany claim (NFS, CephFS, a CSI driver with RWX), or spec.nodes: 1"
		}
		return []Check{{Name: CheckVolumes, Target: p.Claim, Status: Fail, Message: p.Error(), Fix: fix}}
	case err != nil:
		return []Check{{Name: CheckVolumes, Status: Warn, Message: "could not read the claims: " + err.Error()}}
	case sts == nil:
		return []Check{{Name: CheckVolumes, Status: Warn, Message: "may not read PersistentVolumeClaims here: the recipe's claims are not checked",
			Fix:  "ask for get on persistentvolumeclaims (the Role ain needs has it)",
			Next: []next.Command{"preflight --print-role"}}}
	}
	var out []Check
	for _, s := range sts {
		c := Check{Name: CheckVolumes, Target: s.Claim, Status: Pass,
			Message: fmt.Sprintf("volume %q: PersistentVolumeClaim %s is %s (%s)", s.Volume, s.Claim, s.Phase, claims.ModesString(s.Modes))}
		if s.WaitForFirstConsumer && s.Phase == "Pending" {
			c.Message += ", and binds when the first rank is scheduled (StorageClass " + s.Class + ": WaitForFirstConsumer)"
		}
		if n := s.Pending(); n != "" {
			c.Status, c.Message, c.Fix = Warn, n, "check the StorageClass's provisioner, or create a matching PersistentVolume"
		}
		out = append(out, c)
	}
	return out
}
