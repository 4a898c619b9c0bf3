package catalog

import "strings"

// identEscaper is built once: a strings.Replacer compiles its lookup table
// on first use, and the renderer quotes every column of every flow several
// times (building one per call was most of bqcdc render's time at 1,000
// flows). A Replacer is safe for concurrent use.
var identEscaper = strings.NewReplacer("\\", "\\\\", "`", "\\`")

// QuoteIdent quotes a BigQuery identifier. Names that reach it were checked
// against the changelog schema or the name grammar, so they cannot hold a
// backquote; the escape is defence in depth.
func QuoteIdent(name string) string {
	return "`" + identEscaper.Replace(name) + "`"
}
