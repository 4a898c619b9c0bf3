package spelling

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"region", "ordered_at", "quantity", "qty"}
	for _, tt := range []struct{ name, want string }{
		{"regoin", "region"}, // a swap: two edits
		{"REGION", "region"}, // case is ignored
		{"ordred_at", "ordered_at"},
		{"qtty", "qty"},  // the closest, not the first within two
		{"customer", ""}, // nothing within two edits
	} {
		if got := Nearest(tt.name, names); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
