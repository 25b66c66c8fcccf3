package awsapi

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"time"
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
}

// badParam is a parameter that does not parse; the handler answers it
// with the service's validation error.
type badParam struct{ key, value, want string }

func (e *badParam) Error() string {
	return fmt.Sprintf("Value (%s) for parameter %s is invalid. Expected %s.", e.value, e.key, e.want)
}

// decode fills the struct v points to from form.
func (c *codec) decode(form url.Values, v reflect.Value) error {
	return c.decodeStruct(newQuery(form), v.Elem(), "")
}

// query is a request's parameters with every dotted prefix of their
// names ("Instances.", "Instances.member.", "Instances.member.1."), so
// that asking whether a list element or a structure is present costs a
// lookup: a scan of every name per element made a RegisterInstances of a
// thousand instances a million string compares.
type query struct {
	form     url.Values
	prefixes map[string]bool
}

func newQuery(form url.Values) query {
	q := query{form: form, prefixes: map[string]bool{}}
	for k := range form {
		for i := range len(k) {
			if k[i] == '.' {
				q.prefixes[k[:i+1]] = true
			}
		}
	}
	return q
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
			return &badParam{key, s, "true or false"}
		}
		target.SetBool(b)
	case reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, target.Type().Bits())
		if err != nil {
			return &badParam{key, s, "an integer"}
		}
		target.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return &badParam{key, s, "a number"}
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
