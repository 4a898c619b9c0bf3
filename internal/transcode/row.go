package transcode

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// assemble writes the row: the image's fields, the defaults and the
// metadata, in field number order.
func (p *Plan) assemble(dst []byte, st *state, rm *rowMeta, m *Meta) []byte {
	lv := &st.levels[0]
	for i := range p.top {
		tf := &p.top[i]
		switch tf.kind {
		case topWriter:
			sp := lv.spans[tf.slot]
			dst = append(dst, lv.buf[sp.start:sp.end]...)
		case topDefault:
			dst = append(dst, tf.bytes...)
		case topMeta:
			dst = p.appendMeta(dst, st, tf, rm, m)
		}
	}
	return dst
}

func (p *Plan) appendMeta(dst []byte, st *state, tf *topField, rm *rowMeta, m *Meta) []byte {
	switch tf.meta {
	case mOp:
		if len(rm.op) > 0 {
			dst = protowire.AppendBytes(append(dst, tf.tag...), rm.op)
		}
	case mSourceTS:
		if !rm.sourceTS.IsZero() {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(rm.sourceTS.UnixMicro()))
		}
	case mSequence:
		if !rm.seq.IsZero() {
			dst = append(dst, tf.tag...)
			dst = protowire.AppendVarint(dst, uint64(rm.seq.Len()))
			dst = rm.seq.AppendTo(dst)
		}
	case mIngestedAt:
		dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(m.IngestedAt.UnixMicro()))
	case mPublishTime:
		if !m.PublishTime.IsZero() {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(m.PublishTime.UnixMicro()))
		}
	case mMessageID:
		if m.MessageID != "" {
			dst = protowire.AppendString(append(dst, tf.tag...), m.MessageID)
		}
	case mSchemaID:
		if m.SchemaID != 0 {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(int64(m.SchemaID)))
		}
	case mTransaction:
		if rm.tx {
			dst = append(dst, tf.tag...)
			var mark int
			dst, mark = beginLen(dst)
			for _, f := range p.tx {
				v := st.src[f.slot]
				dst = append(dst, f.tag...)
				if f.str {
					if v.kind != skString {
						v.s = nil
					}
					dst = protowire.AppendBytes(dst, v.s)
				} else {
					if v.kind != skInt {
						v.i = 0
					}
					dst = protowire.AppendVarint(dst, uint64(v.i))
				}
			}
			dst = endLen(dst, mark)
		}
	}
	return dst
}
