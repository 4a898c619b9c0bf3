package flow

import "slices"

// KeysBySource lists, by source topic, the KEYS columns of every flow
// reading it: ingest refuses a writer schema that lacks one. Snapshot flows
// read no topic and are left out.
func KeysBySource(flows []*Flow) map[string][]string {
	keys := map[string][]string{}
	for _, f := range flows {
		if f.IsSnapshot() {
			continue
		}
		for _, k := range f.Keys {
			if !slices.Contains(keys[f.Source.Name], k.Name) {
				keys[f.Source.Name] = append(keys[f.Source.Name], k.Name)
			}
		}
	}
	return keys
}
