package flow

import "strings"

// ChangeDataFeedProperty is the table property that turns a target's
// change feed off (or on), as Delta's Change Data Feed is turned on and
// off: CREATE OR REFRESH STREAMING TABLE t TBLPROPERTIES
// ('delta.enableChangeDataFeed' = 'false'). bqcdc materializes the feed of
// every SCD 1 and SCD 2 flow by default (unlike Delta, where it is off), so
// only 'false' changes anything: such a flow gets no change table and no
// <target>_changes, and a compaction run of it reads no state at all (the
// feed's baselines are what it reads the state for).
const ChangeDataFeedProperty = "delta.enableChangeDataFeed"

// tableDecl is what a streaming table's declaration says that bqcdc uses:
// for now whether its change feed is off.
type tableDecl struct {
	target Target
	noFeed bool
}

// tableProperties reads TBLPROPERTIES ('key' = value, ...) after the
// keyword: the change feed's property, checked; any other property is
// accepted and ignored (bqcdc's targets are views: Delta's properties do
// not apply to them).
func (p *parser) tableProperties(d *tableDecl) *Error {
	p.next() // TBLPROPERTIES
	if err := p.punct("("); err != nil {
		return err
	}
	for {
		k := p.peek()
		key := k.Text
		switch k.Kind {
		case tokString:
			p.next()
		case tokIdent, tokQuoted: // a dotted key without quotes: pipelines.channel
			p.next()
			for p.isPunct(".") && (p.peekN(1).Kind == tokIdent || p.peekN(1).Kind == tokQuoted) {
				p.next()
				key += "." + p.next().Text
			}
		default:
			return errorf(k.Pos, "TBLPROPERTIES expects key = value, found %s", k.describe())
		}
		if err := p.punct("="); err != nil {
			return err
		}
		v := p.next()
		if v.Kind != tokString && v.Kind != tokIdent && v.Kind != tokNumber {
			return errorf(v.Pos, "TBLPROPERTIES expects a value after %s =, found %s", key, v.describe())
		}
		if strings.EqualFold(key, ChangeDataFeedProperty) {
			switch strings.ToLower(v.Text) {
			case "true":
				d.noFeed = false
			case "false":
				d.noFeed = true
			default:
				return errorf(v.Pos, "%s is 'true' or 'false', found %s", ChangeDataFeedProperty, v.describe())
			}
		}
		if !p.isPunct(",") {
			return p.punct(")")
		}
		p.next()
	}
}

// applyDecls gives each flow what its target's declaration says. A
// declaration of a target no flow writes says nothing (Databricks allows
// declaring a table a flow of another pipeline fills).
func applyDecls(flows []*Flow, decls []tableDecl) {
	byTarget := map[string]tableDecl{}
	for _, d := range decls {
		byTarget[strings.ToLower(d.target.String())] = d
	}
	for _, f := range flows {
		if d, ok := byTarget[strings.ToLower(f.Target.String())]; ok && d.noFeed {
			f.NoChangeFeed = true
		}
	}
}
