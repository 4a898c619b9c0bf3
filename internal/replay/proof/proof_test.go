package proof

import (
	"bytes"
	"testing"
)

func TestVerify(t *testing.T) {
	key := bytes.Repeat([]byte("k"), MinKeyLen)
	data := []byte{0, 0, 0, 0, 1, 2, 3}
	p := Sign(key, "db.inv.t", "1234", data)
	tests := []struct {
		name            string
		key             []byte
		topic, id, data string
		proof           string
		want            bool
	}{
		{"valid", key, "db.inv.t", "1234", string(data), p, true},
		{"tampered data", key, "db.inv.t", "1234", string(data) + "x", p, false},
		{"other id", key, "db.inv.t", "1235", string(data), p, false},
		{"other topic", key, "db-inv-t", "1234", string(data), p, false},
		{"field boundary moved", key, "db.inv.t1", "234", string(data), p, false},
		{"other key", bytes.Repeat([]byte("j"), MinKeyLen), "db.inv.t", "1234", string(data), p, false},
		{"no key", nil, "db.inv.t", "1234", string(data), p, false},
		{"no proof", key, "db.inv.t", "1234", string(data), "", false},
		{"not base64", key, "db.inv.t", "1234", string(data), "!!", false},
		{"truncated", key, "db.inv.t", "1234", string(data), p[:len(p)-2], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verify(tt.key, tt.topic, tt.id, []byte(tt.data), tt.proof); got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}
