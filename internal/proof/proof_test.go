package proof

import (
	"bytes"
	"testing"
	"time"
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

// SignAt's proof covers the publish time: another time, a v1 proof, or a
// v2 proof checked as v1 do not verify.
func TestSignAtCoversPublishTime(t *testing.T) {
	key := bytes.Repeat([]byte("k"), MinKeyLen)
	data := []byte("payload")
	at := FormatTime(time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC))
	p := SignAt(key, "t", "id", at, data)
	if !VerifyAt(key, "t", "id", at, data, p) {
		t.Fatal("SignAt's proof does not verify")
	}
	if VerifyAt(key, "t", "id", FormatTime(time.Now()), data, p) || Verify(key, "t", "id", data, p) || VerifyAt(key, "t", "id", at, data, Sign(key, "t", "id", data)) {
		t.Error("a proof verifies for another time or scheme")
	}
	if got, err := ParseTime(at); err != nil || !got.Equal(time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)) {
		t.Errorf("ParseTime(%s) = %v, %v", at, got, err)
	}
	for _, bad := range []string{"", "x", "-1", "0", "253402300800000000", "1e6"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}
