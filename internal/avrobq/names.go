package avrobq

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxNameLen is BigQuery's limit on the length of a column name.
const maxNameLen = 300

// reservedPrefixes start column names BigQuery refuses, compared without
// regard to case (https://cloud.google.com/bigquery/docs/schemas#column_names).
var reservedPrefixes = []string{"_TABLE_", "_FILE_", "_PARTITION", "_ROW_TIMESTAMP", "__ROOT__", "_COLIDENTIFIER"}

// bqcdcPrefixes start names bqcdc keeps for itself, also compared without
// regard to case: "__" for the columns its SQL adds (__START_AT, __END_AT of
// SCD type 2 targets; flow binding refuses a changelog with any other "__"
// column), "_cdc_" for the changelog's metadata columns, and the Storage
// Write API's CDC pseudo-columns _CHANGE_TYPE and _CHANGE_SEQUENCE_NUMBER,
// which an append would take for instructions rather than values.
var bqcdcPrefixes = []string{"__", "_cdc_", "_CHANGE_TYPE", "_CHANGE_SEQUENCE_NUMBER"}

// ReservedPrefix is what ColumnName puts in front of a name that starts with
// a reserved prefix. It starts with a letter, so the result never does.
const ReservedPrefix = "src"

// ColumnName returns the BigQuery column name bqcdc gives a source field.
//
// A name BigQuery and bqcdc accept is kept as it is: it consists of ASCII
// letters, digits and underscores, does not start with a digit, has at most
// 300 characters, and does not start with one of BigQuery's reserved
// prefixes _TABLE_, _FILE_, _PARTITION, _ROW_TIMESTAMP, __ROOT__ or
// _COLIDENTIFIER, nor with one bqcdc reserves: "__", "_cdc_", _CHANGE_TYPE or
// _CHANGE_SEQUENCE_NUMBER (all in any letter case). Any other name is
// rewritten in three steps:
//
//  1. every character other than an ASCII letter, digit or underscore
//     becomes one underscore ("unit price" → "unit_price", "Größe" →
//     "Gr__e"; each byte of invalid UTF-8 counts as one character);
//  2. if the result starts with a reserved prefix, "src" is put in front
//     ("_PARTITIONTIME" → "src_PARTITIONTIME", "__deleted" →
//     "src__deleted", "_cdc_op" → "src_cdc_op"); else if it is empty or
//     starts with a digit, an underscore is ("1st" → "_1st");
//  3. if the result is longer than 300 characters, it is cut to its first
//     291 characters followed by an underscore and the first 8 hexadecimal
//     digits (lower case) of the SHA-256 of the source name's UTF-8 bytes.
//
// Every name the rule returns is one BigQuery accepts and flow binding
// accepts (no "__" prefix, no "_cdc_" prefix). The rule looks at one name
// only, never at the other fields of the schema, so a later schema version
// maps every field exactly as earlier versions did, and a column keeps its
// name for the life of the table. Letter case is kept. Because BigQuery
// compares column names without regard to case, two fields of one record
// whose column names are equal ignoring case (such as "id" and "Id", or
// "unit price" and "unit_price") cannot both be columns: compiling such a
// schema fails with an error naming both source fields. Characters outside
// ASCII are replaced rather than kept as BigQuery's flexible column names
// because the Storage Write API's protocol buffer field names are limited to
// the ASCII set.
func ColumnName(source string) string {
	if validColumnName(source) {
		return source
	}
	var b strings.Builder
	b.Grow(len(source) + len(ReservedPrefix))
	for i := 0; i < len(source); {
		r, size := utf8.DecodeRuneInString(source[i:])
		i += size
		if isNameChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	switch {
	case reservedPrefix(name):
		name = ReservedPrefix + name
	case name == "" || isDigit(name[0]):
		name = "_" + name
	}
	if len(name) > maxNameLen {
		sum := sha256.Sum256([]byte(source))
		name = name[:maxNameLen-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

func validColumnName(s string) bool {
	if s == "" || len(s) > maxNameLen || isDigit(s[0]) || reservedPrefix(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameChar(rune(s[i])) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isNameChar(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

func reservedPrefix(s string) bool {
	for _, list := range [][]string{reservedPrefixes, bqcdcPrefixes} {
		for _, p := range list {
			if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
				return true
			}
		}
	}
	return false
}

// checkColumnNames refuses a record whose fields map to column names that
// BigQuery would take for the same column.
func checkColumnNames(fs Fields) error {
	seen := make(map[string]Field, len(fs))
	for _, f := range fs {
		key := strings.ToLower(f.Name)
		if other, dup := seen[key]; dup {
			return fmt.Errorf("fields %q (column %s) and %q (column %s) would be the same BigQuery column: "+
				"BigQuery compares column names without regard to case (see ColumnName)", other.Source, other.Name, f.Source, f.Name)
		}
		seen[key] = f
	}
	return nil
}
