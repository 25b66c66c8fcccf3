package awsapi

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// codec reads query-protocol parameters into an SDK input struct and
// writes an SDK output struct as XML, by reflection, with the wire names
// gennames took from the SDK's own (de)serializers.
type codec struct {
	params   map[string]string // "Type.Field" -> parameter name
	elements map[string]string // "Type.Field" -> XML element name
	// member is the list member element: "item" for EC2, "member" for
	// ELB and ELBv2. EC2 parameters are flat lists (Name.1), ELB's are
	// Name.member.1.
	member   string
	flatList bool
	// fields is params reversed: type -> parameter name -> field name.
	fields map[string]map[string]string
}

func newCodec(params, elements map[string]string, member string, flatList bool) codec {
	c := codec{params: params, elements: elements, member: member, flatList: flatList, fields: map[string]map[string]string{}}
	for k, name := range params {
		typ, field, _ := strings.Cut(k, ".")
		if c.fields[typ] == nil {
			c.fields[typ] = map[string]string{}
		}
		c.fields[typ][name] = field
	}
	return c
}

// paramError is a parameter the lab refuses; decodeError answers it in
// the service's spelling.
type paramError struct {
	kind             paramKind
	key, value, want string
}

type paramKind int

const (
	paramMalformed paramKind = iota // a name that is not a query parameter's
	paramUnknown                    // a well-formed name the action does not take
	paramBadValue                   // a value that does not parse as its type
	paramBadChar                    // a value with a character AWS refuses
)

func (e *paramError) Error() string {
	switch e.kind {
	case paramMalformed:
		return fmt.Sprintf("The parameter name '%s' is malformed: a query parameter's name is at most %d characters of letters, digits and dots", clip(e.key), maxParamName)
	case paramUnknown:
		return fmt.Sprintf("The parameter %s is not recognized", clip(e.key))
	case paramBadChar:
		return fmt.Sprintf("Value for parameter %s contains an invalid character (%s)", clip(e.key), e.want)
	}
	return fmt.Sprintf("Value (%s) for parameter %s is invalid. Expected %s.", clip(e.value), clip(e.key), e.want)
}

// decodeError is the answer to a parameter the codec refused. EC2 has a
// code for each (UnknownParameter, InvalidCharacter, InvalidQueryParameter,
// InvalidParameterValue: its common client errors); ELB and ELBv2 answer a
// malformed or unknown name InvalidQueryParameter and a bad value
// ValidationError (their common errors).
func decodeError(svc *service, err error) *apiError {
	var pe *paramError
	if !errors.As(err, &pe) {
		return &apiError{http.StatusBadRequest, validationCode(svc), err.Error()}
	}
	ec2 := svc.ID == "ec2"
	code := validationCode(svc)
	switch {
	case pe.kind == paramMalformed:
		code = "InvalidQueryParameter"
	case pe.kind == paramUnknown && ec2:
		code = "UnknownParameter"
	case pe.kind == paramUnknown:
		code = "InvalidQueryParameter"
	case pe.kind == paramBadChar && ec2:
		code = "InvalidCharacter"
	}
	return &apiError{http.StatusBadRequest, code, pe.Error()}
}

// maxParamName bounds a parameter's name. The longest the lab's actions
// take (ELBv2's Actions.member.N.ForwardConfig.TargetGroups.member.N.
// TargetGroupArn) is under 80 characters.
const maxParamName = 256

// maxIndex bounds a list index's digits: a form of at most maxBody bytes
// has fewer elements than that.
const maxIndexDigits = 6

// commonParams are the parameters of every action.
var commonParams = map[string]bool{"Action": true, "Version": true}

// decode fills the struct v points to from form. Every parameter must be
// one the action takes, and every value free of characters AWS refuses,
// before anything is read: a refused request changes nothing.
func (c *codec) decode(form url.Values, v reflect.Value) error {
	q, err := c.newQuery(form, v.Type().Elem())
	if err != nil {
		return err
	}
	return c.decodeStruct(q, v.Elem(), "")
}

// query is a request's parameters with every dotted prefix of their
// names ("Instances.", "Instances.member.", "Instances.member.1."), so
// that asking whether a list element or a structure is present costs a
// lookup: a scan of every name per element made a RegisterInstances of a
// thousand instances a million string compares. Names are checked
// against the action's input type first, so each is at most maxParamName
// long and the prefixes cost a constant per parameter: building a query
// is linear in the form's size.
type query struct {
	form     url.Values
	prefixes map[string]bool
	// work counts the bytes examined (names checked, prefixes hashed,
	// values scanned), so a test can show it is linear in the input.
	work int
}

func (c *codec) newQuery(form url.Values, in reflect.Type) (query, error) {
	q := query{form: form, prefixes: map[string]bool{}}
	for k, vs := range form {
		list, err := c.checkName(&q, in, k)
		if err != nil {
			return q, err
		}
		for _, v := range vs {
			// The SDK writes an empty list as its bare name with an empty
			// value (newArray, aws/protocol/query/array.go of
			// aws-sdk-go-v2 v1.41.1); a list has no other value.
			if list && v != "" {
				return q, &paramError{kind: paramUnknown, key: k}
			}
			q.work += len(v)
			if why := badChars(v); why != "" {
				return q, &paramError{kind: paramBadChar, key: k, value: v, want: why}
			}
		}
	}
	for k := range form {
		for i := range len(k) {
			if k[i] == '.' {
				q.prefixes[k[:i+1]] = true
				q.work += i + 1
			}
		}
	}
	return q, nil
}

// checkName accepts a parameter name only if it names a value of the
// input type t: each dotted segment a field's wire name, or a list's
// index (after "member" for ELB's lists), down to a scalar, or a list
// (which may be sent empty). It stops at the first segment that is not,
// so a name of a million dots costs one.
func (c *codec) checkName(q *query, t reflect.Type, key string) (list bool, err error) {
	q.work++
	if len(key) > maxParamName {
		return false, &paramError{kind: paramMalformed, key: key}
	}
	q.work += len(key)
	if commonParams[key] {
		return false, nil
	}
	for i := range len(key) {
		b := key[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.') {
			return false, &paramError{kind: paramMalformed, key: key}
		}
	}
	rest := key
	for {
		seg, tail, more := strings.Cut(rest, ".")
		if seg == "" {
			return false, &paramError{kind: paramMalformed, key: key}
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]():
			f, ok := c.fields[t.Name()][seg]
			if !ok {
				return false, &paramError{kind: paramUnknown, key: key}
			}
			sf, ok := t.FieldByName(f)
			if !ok {
				return false, &paramError{kind: paramUnknown, key: key}
			}
			t = sf.Type
		case t.Kind() == reflect.Slice:
			if !c.flatList {
				if seg != "member" || !more {
					return false, &paramError{kind: paramUnknown, key: key}
				}
				seg, tail, more = strings.Cut(tail, ".")
			}
			if !isIndex(seg) {
				return false, &paramError{kind: paramUnknown, key: key}
			}
			t = t.Elem()
		default:
			// A scalar has no fields.
			return false, &paramError{kind: paramUnknown, key: key}
		}
		if !more {
			break
		}
		rest = tail
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.String, t.Kind() == reflect.Bool, t.Kind() == reflect.Int32, t.Kind() == reflect.Int64,
		t.Kind() == reflect.Float64, t == reflect.TypeFor[time.Time]():
		return false, nil
	case t.Kind() == reflect.Slice:
		return true, nil
	}
	// A structure has no value of its own.
	return false, &paramError{kind: paramUnknown, key: key}
}

// isIndex accepts a list index: 1, 2, ... without leading zeros.
func isIndex(s string) bool {
	if s == "" || len(s) > maxIndexDigits || s[0] == '0' {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// badChars says why AWS would refuse a value's characters, or "": it must
// be UTF-8 without control characters other than tab, line feed and
// carriage return, which is also what an XML 1.0 answer can carry back.
func badChars(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return "not UTF-8"
			}
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.IsControl(r):
			return fmt.Sprintf("control character %U", r)
		case r == 0xFFFE || r == 0xFFFF:
			return fmt.Sprintf("noncharacter %U", r)
		}
	}
	return ""
}

// hasPrefix reports whether a parameter's name starts with prefix, which
// ends in a dot.
func (q query) hasPrefix(prefix string) bool { return q.prefixes[prefix] }

func (c *codec) listKey(key string, i int) string {
	if c.flatList {
		return key + "." + strconv.Itoa(i)
	}
	return key + ".member." + strconv.Itoa(i)
}

func (c *codec) decodeStruct(q query, sv reflect.Value, prefix string) error {
	t := sv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := c.params[t.Name()+"."+f.Name]
		if !ok || !f.IsExported() {
			continue
		}
		if err := c.decodeValue(q, sv.Field(i), prefix+name); err != nil {
			return err
		}
	}
	return nil
}

func (c *codec) decodeValue(q query, fv reflect.Value, key string) error {
	ft := fv.Type()
	switch {
	case ft.Kind() == reflect.Slice:
		et := ft.Elem()
		out := reflect.MakeSlice(ft, 0, 0)
		for i := 1; ; i++ {
			k := c.listKey(key, i)
			if !q.form.Has(k) && !q.hasPrefix(k+".") {
				break
			}
			ev := reflect.New(et).Elem()
			if err := c.decodeValue(q, ev, k); err != nil {
				return err
			}
			out = reflect.Append(out, ev)
		}
		if out.Len() > 0 {
			fv.Set(out)
		}
		return nil
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && ft.Elem() != reflect.TypeFor[time.Time]():
		if !q.hasPrefix(key + ".") {
			return nil
		}
		p := reflect.New(ft.Elem())
		if err := c.decodeStruct(q, p.Elem(), key+"."); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	case ft.Kind() == reflect.Struct:
		return c.decodeStruct(q, fv, key+".")
	}
	if !q.form.Has(key) {
		return nil
	}
	s := q.form.Get(key)
	target := fv
	if ft.Kind() == reflect.Pointer {
		target = reflect.New(ft.Elem()).Elem()
	}
	switch target.Kind() {
	case reflect.String:
		target.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return &paramError{kind: paramBadValue, key: key, value: s, want: "true or false"}
		}
		target.SetBool(b)
	case reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, target.Type().Bits())
		if err != nil {
			return &paramError{kind: paramBadValue, key: key, value: s, want: "an integer"}
		}
		target.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return &paramError{kind: paramBadValue, key: key, value: s, want: "a number"}
		}
		target.SetFloat(n)
	default:
		return nil // a kind the lab's actions never take
	}
	if ft.Kind() == reflect.Pointer {
		p := reflect.New(ft.Elem())
		p.Elem().Set(target)
		fv.Set(p)
	}
	return nil
}

// encode writes the fields of the struct v points to as XML elements.
func (c *codec) encode(buf *bytes.Buffer, v reflect.Value) error {
	return c.encodeStruct(buf, v.Elem())
}

func (c *codec) encodeStruct(buf *bytes.Buffer, sv reflect.Value) error {
	t := sv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "ResultMetadata" {
			continue
		}
		name, ok := c.elements[t.Name()+"."+f.Name]
		if !ok {
			if sv.Field(i).IsZero() {
				continue
			}
			// A set field the SDK would not read is a lab bug: fail loudly
			// rather than send an answer the provider misreads.
			return fmt.Errorf("awsapi: no XML name for %s.%s (run go generate ./lab/awsapi)", t.Name(), f.Name)
		}
		if err := c.encodeValue(buf, name, sv.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func (c *codec) encodeValue(buf *bytes.Buffer, name string, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if t, ok := v.Interface().(*time.Time); ok {
			writeElem(buf, name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
			return nil
		}
		return c.encodeValue(buf, name, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		buf.WriteString("<" + name + ">")
		for i := range v.Len() {
			if err := c.encodeValue(buf, c.member, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteString("</" + name + ">")
		return nil
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			writeElem(buf, name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
			return nil
		}
		buf.WriteString("<" + name + ">")
		if err := c.encodeStruct(buf, v); err != nil {
			return err
		}
		buf.WriteString("</" + name + ">")
		return nil
	case reflect.String:
		// The SDK's enums are named string types held by value: "" is
		// an unset member, which AWS leaves out (an empty element is no
		// value of the enum, and botocore's validator refuses it).
		if v.String() == "" && v.Type().PkgPath() != "" {
			return nil
		}
		writeElem(buf, name, v.String())
	case reflect.Bool:
		writeElem(buf, name, strconv.FormatBool(v.Bool()))
	case reflect.Int32, reflect.Int64, reflect.Int:
		writeElem(buf, name, strconv.FormatInt(v.Int(), 10))
	case reflect.Float64:
		writeElem(buf, name, strconv.FormatFloat(v.Float(), 'g', -1, 64))
	default:
		return fmt.Errorf("awsapi: cannot encode %s (%s)", name, v.Type())
	}
	return nil
}

func writeElem(buf *bytes.Buffer, name, text string) {
	buf.WriteString("<" + name + ">")
	_ = xml.EscapeText(buf, []byte(text))
	buf.WriteString("</" + name + ">")
}
