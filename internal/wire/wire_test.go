package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		wantID  int32
		wantPay []byte
		wantErr error
	}{
		{name: "good frame", in: []byte{0, 0, 0, 0, 42, 2, 'a'}, wantID: 42, wantPay: []byte{2, 'a'}},
		{name: "large id", in: []byte{0, 0x7f, 0xff, 0xff, 0xff, 1}, wantID: 0x7fffffff, wantPay: []byte{1}},
		{name: "tombstone", in: nil, wantErr: ErrEmpty},
		{name: "empty slice", in: []byte{}, wantErr: ErrEmpty},
		{name: "json value", in: []byte(`{"id":1}`), wantErr: ErrMagicByte},
		{name: "magic 1", in: []byte{1, 0, 0, 0, 1, 2}, wantErr: ErrMagicByte},
		{name: "short header", in: []byte{0, 0, 1}, wantErr: ErrShort},
		{name: "header only", in: []byte{0, 0, 0, 0, 7}, wantErr: ErrNoPayload},
		{name: "id 0", in: []byte{0, 0, 0, 0, 0, 2}, wantErr: ErrSchemaID},
		{name: "id beyond 2^31-1", in: []byte{0, 0x80, 0, 0, 1, 2}, wantErr: ErrSchemaID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse(%v) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if f.SchemaID != tt.wantID || !bytes.Equal(f.Payload, tt.wantPay) {
				t.Errorf("Parse(%v) = id %d payload %v, want id %d payload %v", tt.in, f.SchemaID, f.Payload, tt.wantID, tt.wantPay)
			}
		})
	}
}

func TestAppendRoundTrip(t *testing.T) {
	b := Append(nil, 1234567, []byte("payload"))
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.SchemaID != 1234567 || string(f.Payload) != "payload" {
		t.Errorf("round trip = %d %q", f.SchemaID, f.Payload)
	}
}

func TestIsTombstone(t *testing.T) {
	if !IsTombstone(nil) || !IsTombstone([]byte{}) || IsTombstone([]byte{0}) {
		t.Error("IsTombstone misclassifies")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Parse(b)
		if err == nil && (len(fr.Payload) == 0 || len(b) != len(fr.Payload)+HeaderLen) {
			t.Fatalf("accepted bad frame %v", b)
		}
	})
}
