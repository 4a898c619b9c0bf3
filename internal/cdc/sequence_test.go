package cdc

import (
	"sort"
	"testing"
	"time"
)

func TestSequenceOrder(t *testing.T) {
	// Each list is in true source order; sorting the encoded strings must not
	// change it.
	tests := []struct {
		name string
		seqs []string
	}{
		{name: "mysql binlog rollover", seqs: []string{
			MySQLSequence(9, 4, 0),
			MySQLSequence(9, 0xFFFFFFFF, 0),
			MySQLSequence(10, 4, 0), // new file sorts after any pos of the old one
			MySQLSequence(10, 120, 0),
		}},
		{name: "mysql equal pos different row", seqs: []string{
			MySQLSequence(3, 1000, 0),
			MySQLSequence(3, 1000, 1),
			MySQLSequence(3, 1000, 2),
			MySQLSequence(3, 1000, 10), // 10 > 2 numerically, and as fixed-width hex
			MySQLSequence(3, 1001, 0),
		}},
		{name: "postgres lsn", seqs: []string{
			PostgresSequence(0x16B3748),
			PostgresSequence(0x16B3750),
			PostgresSequence(0xA0000000),
			PostgresSequence(0x1_0000_0000), // crosses a 32-bit boundary
		}},
		{name: "timestamps", seqs: []string{
			TimestampSequence(time.UnixMicro(0)),
			TimestampSequence(time.UnixMicro(999)),
			TimestampSequence(time.UnixMicro(1000)),
			TimestampSequence(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append([]string(nil), tt.seqs...)
			sort.Strings(got)
			for i := range got {
				if got[i] != tt.seqs[i] {
					t.Fatalf("string order differs from source order at %d:\n got %v\nwant %v", i, got, tt.seqs)
				}
			}
		})
	}
}

func TestEncodeSectionsShape(t *testing.T) {
	got := MySQLSequence(1, 0xABC, 2)
	want := "0000000000000001/0000000000000ABC/0000000000000002"
	if got != want {
		t.Errorf("MySQLSequence = %q, want %q", got, want)
	}
	if got := TimestampSequence(time.UnixMicro(-5)); got != "0000000000000000" {
		t.Errorf("pre-epoch timestamp = %q", got)
	}
}

func TestBinlogFileIndex(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{in: "mysql-bin.000003", want: 3},
		{in: "binlog.1000000", want: 1000000},
		{in: "mysql-bin.", wantErr: true},
		{in: "mysql-bin.00a1", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := BinlogFileIndex(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("BinlogFileIndex(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
