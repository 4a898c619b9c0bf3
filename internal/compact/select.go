package compact

import (
	"fmt"

	"github.com/bqcdc/bqcdc/internal/flow"
)

// Select keeps the flows named in names (all when names is empty).
func Select(flows []*flow.Bound, names []string) ([]*flow.Bound, error) {
	if len(names) == 0 {
		return flows, nil
	}
	byName := map[string]*flow.Bound{}
	for _, b := range flows {
		byName[b.Name] = b
	}
	var out []*flow.Bound
	for _, n := range names {
		b, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no flow named %q", n)
		}
		out = append(out, b)
	}
	return out, nil
}
