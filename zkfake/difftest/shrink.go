package difftest

// Shrink returns a smaller sequence that still fails, by delta debugging:
// it drops chunks of ops (halves, then quarters, down to single ops) while
// fails keeps reporting true, then drops the sub-operations of each multi
// one by one, then the sessions no op uses. fails must report true for seq
// itself. returned gives, by op label, the path each create returned in
// the failing run (Transcript.Steps[i].Returned): an op that refers to a
// dropped op ("@3") gets that path instead, so it still names the same
// node.
func Shrink(seq Sequence, returned map[int]string, fails func(Sequence) bool) Sequence {
	byLabel := map[int]Op{}
	for _, op := range seq.Ops {
		byLabel[op.Label] = op
	}
	var literal func(label int) string
	literal = func(label int) string {
		if p := returned[label]; p != "" {
			return p
		}
		op, ok := byLabel[label]
		if !ok {
			return "."
		}
		if ref, ok := refLabel(op.Path); ok && ref < label {
			_, rest, hasRest := cutRef(op.Path)
			if hasRest {
				return joinRel(literal(ref), rest)
			}
			return literal(ref)
		}
		return op.Path
	}
	try := func(ops []Op) (Sequence, bool) {
		cand := seq
		cand.Ops = withRefsResolved(ops, literal)
		return cand, len(cand.Ops) < len(seq.Ops) && fails(cand)
	}

	// ddmin over the ops.
	for chunks := 2; len(seq.Ops) >= 2; {
		size := (len(seq.Ops) + chunks - 1) / chunks
		reduced := false
		for start := 0; start < len(seq.Ops); start += size {
			end := min(start+size, len(seq.Ops))
			rest := append(append([]Op{}, seq.Ops[:start]...), seq.Ops[end:]...)
			if cand, ok := try(rest); ok {
				seq = cand
				chunks = max(chunks-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if size == 1 {
				break
			}
			chunks = min(chunks*2, len(seq.Ops))
		}
	}

	// Sub-operations of each multi.
	for i := 0; i < len(seq.Ops); i++ {
		for j := 0; j < len(seq.Ops[i].Sub); {
			cand := seq
			cand.Ops = append([]Op{}, seq.Ops...)
			op := cand.Ops[i]
			op.Sub = append(append([]Op{}, op.Sub[:j]...), op.Sub[j+1:]...)
			cand.Ops[i] = op
			if fails(cand) {
				seq = cand
			} else {
				j++
			}
		}
	}

	// Sessions no op uses, from the highest.
	for seq.Sessions > 1 {
		used := false
		for _, op := range seq.Ops {
			used = used || op.Session == seq.Sessions
		}
		if used {
			break
		}
		cand := seq
		cand.Sessions--
		if !fails(cand) {
			break
		}
		seq = cand
	}
	return seq
}

// withRefsResolved replaces references to ops not in ops by literal paths.
func withRefsResolved(ops []Op, literal func(label int) string) []Op {
	present := map[int]bool{}
	for _, op := range ops {
		present[op.Label] = true
	}
	var fix func(op Op) Op
	fix = func(op Op) Op {
		if label, ok := refLabel(op.Path); ok && !present[label] {
			_, rest, hasRest := cutRef(op.Path)
			op.Path = literal(label)
			if hasRest {
				op.Path = joinRel(op.Path, rest)
			}
		}
		if len(op.Sub) > 0 {
			subs := make([]Op, len(op.Sub))
			for i, s := range op.Sub {
				subs[i] = fix(s)
			}
			op.Sub = subs
		}
		return op
	}
	out := make([]Op, len(ops))
	for i, op := range ops {
		out[i] = fix(op)
	}
	return out
}

// cutRef splits "@3/rest" into "@3" and "rest".
func cutRef(p string) (ref, rest string, hasRest bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

// joinRel appends rest to a relative path ("." is the base).
func joinRel(p, rest string) string {
	if p == "." {
		return rest
	}
	return p + "/" + rest
}
