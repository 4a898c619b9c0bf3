package flow

import "slices"

// KeysBySource lists, by source topic, the KEYS columns of every flow
// reading it: ingest refuses a writer schema that lacks one. Snapshot flows
// read no topic and are left out.
func KeysBySource(flows []*Flow) map[string][]string {
	keys := map[string][]string{}
	for _, f := range flows {
		src, ok := f.ChangelogSource()
		if !ok {
			continue
		}
		for _, k := range f.Keys {
			if !slices.Contains(keys[src], k.Name) {
				keys[src] = append(keys[src], k.Name)
			}
		}
	}
	return keys
}
