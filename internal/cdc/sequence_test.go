package cdc

import (
	"slices"
	"testing"
	"time"
)

// assertSourceOrder fails unless the sequences, listed in true source order,
// are strictly increasing as strings (what ORDER BY and MAX compare).
func assertSourceOrder(t *testing.T, seqs []string) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		if seqs[i-1] >= seqs[i] {
			t.Errorf("sequence %d does not sort after sequence %d:\n  %d: %s\n  %d: %s", i, i-1, i-1, seqs[i-1], i, seqs[i])
		}
	}
}

func TestSequenceOrder(t *testing.T) {
	tests := []struct {
		name string
		seqs []string // in true source order
	}{
		{name: "binlog rollover", seqs: []string{
			BinlogSequence(9, 4, 0, PhaseChange),
			BinlogSequence(9, 0xFFFFFFFF, 0, PhaseChange),
			BinlogSequence(10, 4, 0, PhaseChange), // new file sorts after any pos of the old one
			BinlogSequence(10, 120, 0, PhaseChange),
		}},
		{name: "binlog equal pos different row", seqs: []string{
			BinlogSequence(3, 1000, 0, PhaseChange),
			BinlogSequence(3, 1000, 1, PhaseChange),
			BinlogSequence(3, 1000, 2, PhaseChange),
			BinlogSequence(3, 1000, 10, PhaseChange), // 10 > 2 numerically, and as fixed-width hex
			BinlogSequence(3, 1001, 0, PhaseChange),
		}},
		{name: "binlog read before change at the same position", seqs: []string{
			BinlogSequence(3, 999, 7, PhaseChange),
			BinlogSequence(3, 1000, 0, PhaseRead),
			BinlogSequence(3, 1000, 0, PhaseChange),
		}},
		{name: "postgres stream order across interleaved transactions", seqs: []string{
			PostgresCommitSequence(0x100, 0x300, PhaseChange),
			PostgresCommitSequence(0x100, 0x500, PhaseChange),
			PostgresCommitSequence(0x808, 0x400, PhaseChange), // began before 0x500, committed after
			PostgresCommitSequence(0x1_0000_0000, 0x10, PhaseChange),
		}},
		{name: "postgres read before change at the same position", seqs: []string{
			PostgresCommitSequence(0x808, 0, PhaseRead),
			PostgresCommitSequence(0x808, 0x400, PhaseRead),
			PostgresCommitSequence(0x808, 0x400, PhaseChange),
		}},
		{name: "postgres legacy lsn", seqs: []string{
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
			assertSourceOrder(t, tt.seqs)
			if sorted := slices.Sorted(slices.Values(tt.seqs)); !slices.Equal(sorted, tt.seqs) {
				t.Errorf("sorting changed the order:\n got %v\nwant %v", sorted, tt.seqs)
			}
		})
	}
}

// Sequences already stored in the layouts written before the phase section
// must sort before the new sequences of changes streamed after them.
func TestSequenceLayoutUpgrade(t *testing.T) {
	legacyBinlog := EncodeSections(3, 1000, 2) // file index / pos / row
	legacyPostgres := PostgresSequence(0x500)  // lsn
	tests := []struct {
		name string
		seqs []string
	}{
		{name: "binlog: same event in both layouts", seqs: []string{legacyBinlog, BinlogSequence(3, 1000, 2, PhaseChange)}},
		{name: "binlog: later row", seqs: []string{legacyBinlog, BinlogSequence(3, 1000, 3, PhaseChange)}},
		{name: "binlog: later event", seqs: []string{legacyBinlog, BinlogSequence(3, 1001, 0, PhaseChange)}},
		{name: "binlog: earlier event stays earlier", seqs: []string{BinlogSequence(3, 999, 0, PhaseChange), legacyBinlog}},
		// The next transaction's last commit LSN is the commit of the
		// transaction holding 0x500, which lies after 0x500 in the WAL.
		{name: "postgres: next transaction", seqs: []string{legacyPostgres, PostgresCommitSequence(0x508, 0x400, PhaseChange)}},
		{name: "postgres: blocking snapshot read after it", seqs: []string{legacyPostgres, PostgresCommitSequence(0x508, 0, PhaseRead)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertSourceOrder(t, tt.seqs) })
	}
}

func TestEncodeSectionsShape(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{BinlogSequence(1, 0xABC, 2, PhaseChange), "0000000000000001/0000000000000ABC/0000000000000002/0000000000000001"},
		{PostgresCommitSequence(0x16B3747, 0x16B3748, PhaseRead), "00000000016B3747/00000000016B3748/0000000000000000"},
		{PostgresSequence(0x16B3748), "00000000016B3748"},
		{TimestampSequence(time.UnixMicro(-5)), "0000000000000000"}, // pre-epoch clamps
	} {
		if tt.got != tt.want {
			t.Errorf("sequence = %q, want %q", tt.got, tt.want)
		}
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
		{in: "000007", want: 7}, // no dot: the whole name is the index
		{in: "mysql-bin.18446744073709551615", want: 1<<64 - 1},
		{in: "mysql-bin.", wantErr: true},
		{in: "mysql-bin.00a1", wantErr: true},
		{in: "", wantErr: true},
		{in: "../x", wantErr: true},
		{in: "mysql-bin.-1", wantErr: true},
		{in: "mysql-bin.+1", wantErr: true},
		{in: "mysql-bin.1_000", wantErr: true},
		{in: "mysql-bin.18446744073709551616", wantErr: true},      // 2^64: wrapped to 0 before
		{in: "mysql-bin.99999999999999999999999", wantErr: true},   // 23 digits
		{in: "mysql-bin.000000000000000000000000000042", want: 42}, // leading zeros are not overflow
	}
	for _, tt := range tests {
		got, err := BinlogFileIndex(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("BinlogFileIndex(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
