package next

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestOfFindsTheCommandsThroughWrapping(t *testing.T) {
	base := errors.New("stale state")
	err := fmt.Errorf("sandbox up: %w", With(base, "sandbox down --purge"))
	if got := Of(err); !slices.Equal(got, []Command{"sandbox down --purge"}) {
		t.Fatalf("Of = %v", got)
	}
	if !errors.Is(err, base) || err.Error() != "sandbox up: stale state" {
		t.Fatalf("the wrapped error changed: %v", err)
	}
	if Of(base) != nil || With(nil, "x") != nil {
		t.Fatal("an error without commands suggests some, or nil became an error")
	}
}
