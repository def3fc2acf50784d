package governance

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/aslrun/aslrun/internal/schemaword"
	"github.com/aslrun/aslrun/jsonvalue"
)

// transitions are the compiled Guard.Transitions rules, each list in a
// fixed order (the order written for arrays, by path for objects).
type transitions struct {
	immutable []rulePath
	monotonic []rulePath
	enums     []enumRule
	keyed     []keyedRule
}

func (t *transitions) empty() bool {
	return len(t.immutable) == 0 && len(t.monotonic) == 0 && len(t.enums) == 0 && len(t.keyed) == 0
}

// rulePath is a rule's path, parsed, and written the way messages write it.
type rulePath struct {
	segs []segment
	text string
}

type enumRule struct {
	rulePath
	values []any
}

type keyedRule struct {
	rulePath
	key       string
	monotonic []string
	allowNew  bool
}

const (
	ruleImmutable = "Guard.Transitions.ImmutablePaths"
	ruleMonotonic = "Guard.Transitions.MonotonicIntegerPaths"
	ruleEnum      = "Guard.Transitions.OrderedEnumPaths"
	ruleKeyed     = "Guard.Transitions.KeyedObjectArrayPaths"
)

func transition(rule, path string, old, new any, reason string) *Violation {
	return violation(ErrTransitionViolation, Detail{Rule: rule, Path: path, Old: old, New: new, Reason: reason})
}

// docName names the two documents in messages.
func docName(proposed bool) string {
	if proposed {
		return "the proposed document"
	}
	return "the previous document"
}

// both looks a rule path up in both documents; a path missing from either
// is a violation.
func (rp *rulePath) both(rule string, prev, proposed any) (old, new any, v *Violation) {
	old, okOld := lookup(prev, rp.segs)
	new, okNew := lookup(proposed, rp.segs)
	switch {
	case !okOld:
		return nil, nil, transition(rule, rp.text, nil, new, rp.text+" is missing from "+docName(false))
	case !okNew:
		return nil, nil, transition(rule, rp.text, old, nil, rp.text+" is missing from "+docName(true))
	}
	return old, new, nil
}

// check applies the rules in their order: immutable, monotonic, ordered
// enum, keyed arrays. The first failure is returned.
func (t *transitions) check(prev, proposed any) *Violation {
	for i := range t.immutable {
		rp := &t.immutable[i]
		old, new, v := rp.both(ruleImmutable, prev, proposed)
		if v != nil {
			return v
		}
		if !jsonvalue.Equal(old, new) {
			return transition(ruleImmutable, rp.text, old, new, rp.text+" changed from "+show(old)+" to "+show(new))
		}
	}
	for i := range t.monotonic {
		rp := &t.monotonic[i]
		old, new, v := rp.both(ruleMonotonic, prev, proposed)
		if v != nil {
			return v
		}
		if v := rp.integer(old, new, false); v != nil {
			return v
		}
		if v := rp.integer(new, old, true); v != nil {
			return v
		}
		if jsonvalue.CompareNumbers(new.(json.Number), old.(json.Number)) < 0 {
			return transition(ruleMonotonic, rp.text, old, new, rp.text+" decreased from "+show(old)+" to "+show(new))
		}
	}
	for i := range t.enums {
		e := &t.enums[i]
		old, new, v := e.both(ruleEnum, prev, proposed)
		if v != nil {
			return v
		}
		from, v := e.position(old, new, false)
		if v != nil {
			return v
		}
		to, v := e.position(new, old, true)
		if v != nil {
			return v
		}
		if to < from {
			return transition(ruleEnum, e.text, old, new, e.text+" moved backward from "+show(old)+" to "+show(new))
		}
	}
	for i := range t.keyed {
		if v := t.keyed[i].check(prev, proposed); v != nil {
			return v
		}
	}
	return nil
}

// integer checks that v, the value in the proposed document or (proposed
// false) in the previous one, is an integer; other is the value in the
// other document.
func (rp *rulePath) integer(v, other any, proposed bool) *Violation {
	if n, ok := v.(json.Number); ok && jsonvalue.IsInteger(n) {
		return nil
	}
	old, new := other, v
	if !proposed {
		old, new = v, other
	}
	return transition(ruleMonotonic, rp.text, old, new,
		rp.text+" in "+docName(proposed)+" must be an integer, not "+show(v))
}

// position returns the place in the enum's list of v, the value in the
// proposed document or (proposed false) in the previous one.
func (e *enumRule) position(v, other any, proposed bool) (int, *Violation) {
	for i, w := range e.values {
		if jsonvalue.Equal(v, w) {
			return i, nil
		}
	}
	old, new := other, v
	if !proposed {
		old, new = v, other
	}
	return 0, transition(ruleEnum, e.text, old, new,
		e.text+" in "+docName(proposed)+" is "+show(v)+", not "+schemaword.OneOf(e.values))
}

func (k *keyedRule) check(prev, proposed any) *Violation {
	oldV, newV, v := k.both(ruleKeyed, prev, proposed)
	if v != nil {
		return v
	}
	olds, okOld := oldV.([]any)
	news, okNew := newV.([]any)
	switch {
	case !okOld:
		return transition(ruleKeyed, k.text, oldV, newV, k.text+" in "+docName(false)+" must be an array, not "+jsonvalue.TypeName(oldV))
	case !okNew:
		return transition(ruleKeyed, k.text, oldV, newV, k.text+" in "+docName(true)+" must be an array, not "+jsonvalue.TypeName(newV))
	case sameSlice(olds, news):
		return nil // unchanged
	}
	if v := k.items(olds, false); v != nil {
		return v
	}
	if v := k.items(news, true); v != nil {
		return v
	}
	// Existing items stay, in order. items has checked that every item is
	// an object with the key.
	for i, item := range olds {
		key := item.(map[string]any)[k.key]
		if i < len(news) && jsonvalue.Equal(key, news[i].(map[string]any)[k.key]) {
			continue
		}
		where := k.itemPath(key)
		for j, nitem := range news {
			if jsonvalue.Equal(key, nitem.(map[string]any)[k.key]) {
				return transition(ruleKeyed, where, item, nitem,
					where+" moved from index "+strconv.Itoa(i)+" to "+strconv.Itoa(j)+" (existing items keep their order)")
			}
		}
		return transition(ruleKeyed, where, item, nil, where+" was removed (existing items stay)")
	}
	for i, item := range olds {
		if v := k.fields(item.(map[string]any), news[i].(map[string]any)); v != nil {
			return v
		}
	}
	if !k.allowNew && len(news) > len(olds) {
		item := news[len(olds)]
		where := k.itemPath(item.(map[string]any)[k.key])
		return transition(ruleKeyed, where, nil, item,
			where+" was added, but "+k.text+" allows no new items (AllowNewItems is false)")
	}
	return nil
}

// items checks every item of a keyed array: an object with the key, a
// string or number, not repeated.
func (k *keyedRule) items(a []any, proposed bool) *Violation {
	fail := func(i int, item any, msg string) *Violation {
		where := k.text + "[" + strconv.Itoa(i) + "]"
		d := Detail{Rule: ruleKeyed, Path: where, Reason: where + " in " + docName(proposed) + " " + msg}
		if proposed {
			d.New = item
		} else {
			d.Old = item
		}
		return violation(ErrTransitionViolation, d)
	}
	// Short arrays are searched; longer ones use maps, with number keys in
	// the canonical spelling of their value so that 1 and 1.0 are one key.
	var strs, nums map[string]int
	if len(a) > 16 {
		strs = make(map[string]int, len(a))
	}
	for i, item := range a {
		m, ok := item.(map[string]any)
		if !ok {
			return fail(i, item, "must be an object, not "+jsonvalue.TypeName(item))
		}
		key, ok := m[k.key]
		if !ok {
			return fail(i, item, "has no key "+strconv.Quote(k.key))
		}
		switch key.(type) {
		case string, json.Number:
		default:
			return fail(i, item, "has the key "+k.keyName()+"="+show(key)+", which must be a string or a number")
		}
		j := -1
		if strs != nil {
			seen, id := strs, ""
			switch x := key.(type) {
			case string:
				id = x
			case json.Number:
				canon, err := jsonvalue.Canonical(x)
				if err != nil {
					return fail(i, item, "has the key "+k.keyName()+"="+show(key)+", which is not a valid number")
				}
				if nums == nil {
					nums = make(map[string]int)
				}
				seen, id = nums, string(canon)
			}
			if prior, dup := seen[id]; dup {
				j = prior
			} else {
				seen[id] = i
			}
		} else {
			for p := range i {
				if jsonvalue.Equal(a[p].(map[string]any)[k.key], key) {
					j = p
					break
				}
			}
		}
		if j >= 0 {
			return fail(i, item, "repeats the key "+k.keyName()+"="+show(key)+" of "+k.text+"["+strconv.Itoa(j)+"]")
		}
	}
	return nil
}

func (k *keyedRule) keyName() string {
	if jsonvalue.IsIdentifier(k.key) {
		return k.key
	}
	return strconv.Quote(k.key)
}

// itemPath names an item by its key: $.tasks[id="task-1"].
func (k *keyedRule) itemPath(key any) string {
	return k.text + "[" + k.keyName() + "=" + show(key) + "]"
}

// fields compares an existing item with its new version: fields that are
// not booleans never change, appear or disappear; booleans not listed in
// MonotonicBooleanFields may change; listed ones only go false → true.
func (k *keyedRule) fields(old, new map[string]any) *Violation {
	if sameMap(old, new) {
		return nil
	}
	key := old[k.key]
	names := make([]string, 0, len(old)+2)
	for f := range old {
		names = append(names, f)
	}
	for f := range new {
		if _, ok := old[f]; !ok {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	for _, f := range names {
		if f == k.key {
			continue
		}
		ov, hasOld := old[f]
		nv, hasNew := new[f]
		where := func() string { return k.itemPath(key) + string(appendSeg(nil, keySeg(f))) }
		if slices.Contains(k.monotonic, f) {
			if v := monotonicBool(where, ov, hasOld, nv, hasNew); v != nil {
				return v
			}
			continue
		}
		_, oldBool := ov.(bool)
		_, newBool := nv.(bool)
		if (!hasOld || oldBool) && (!hasNew || newBool) {
			continue // a boolean field not listed may change
		}
		switch {
		case !hasOld:
			return transition(ruleKeyed, where(), nil, nv, where()+" was added with "+show(nv)+" (fields of existing items do not change)")
		case !hasNew:
			return transition(ruleKeyed, where(), ov, nil, where()+" was removed (it was "+show(ov)+"; fields of existing items do not change)")
		case !jsonvalue.Equal(ov, nv):
			return transition(ruleKeyed, where(), ov, nv, where()+" changed from "+show(ov)+" to "+show(nv))
		}
	}
	return nil
}

func monotonicBool(where func() string, ov any, hasOld bool, nv any, hasNew bool) *Violation {
	o, oldBool := ov.(bool)
	n, newBool := nv.(bool)
	switch {
	case hasOld && !oldBool:
		return transition(ruleKeyed, where(), ov, nv, where()+" in "+docName(false)+" must be a boolean, not "+show(ov))
	case hasNew && !newBool:
		return transition(ruleKeyed, where(), ov, nv, where()+" in "+docName(true)+" must be a boolean, not "+show(nv))
	case o && !hasNew:
		return transition(ruleKeyed, where(), ov, nil, where()+" went back from true to absent")
	case o && !n:
		return transition(ruleKeyed, where(), ov, nv, where()+" went back from true to false")
	}
	return nil
}
