package vllm

import (
	"context"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// ClaimProblem says why a model volume's PersistentVolumeClaim cannot serve the recipe (see
// package claims).
type ClaimProblem = claims.Problem

// CheckClaims reads the claims the recipe's volumes name, before anything is applied: a
// missing or Lost claim, or one only a single node can mount while more than one replica runs,
// is a *ClaimProblem. A Pending claim is fine (a WaitForFirstConsumer class binds it when the
// first pod is scheduled); its requested modes are checked. Without the right to read claims (an
// RBAC Forbidden) the check is skipped: the apply itself does not need it.
func (c *Cluster) CheckClaims(ctx context.Context, s *recipe.ServingSpec) error {
	var uses []claims.Use
	for _, v := range s.Volumes {
		uses = append(uses, claims.Use{Volume: v.Name, Claim: v.ClaimName})
	}
	_, err := claims.Check(ctx, c.Kube, c.Namespace, uses, s.Replicas, "replicas")
	return err
}
