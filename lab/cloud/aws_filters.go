package cloud

import (
	"maps"
	"slices"
	"strings"
)

// Filter is an EC2 filter: a name and the values any one of which matches.
type Filter struct {
	Name   string
	Values []string
}

// filterSet checks filters against a resource's fields; fields maps filter
// names to the resource's values for it ("tag:K" and "tag-key" come from
// tags). Unknown filter names are an error, as on EC2, so a typo fails
// loudly instead of matching everything.
func matchFilters(filters []Filter, known []string, fields map[string][]string, tags map[string]string) (bool, error) {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]; ok {
				have = []string{v}
			}
		case f.Name == "tag-key":
			have = slices.Collect(maps.Keys(tags))
		case slices.Contains(known, f.Name):
			have = fields[f.Name]
		default:
			return false, errorf(ErrInvalidFilter, "The filter '%s' is invalid", f.Name)
		}
		if !slices.ContainsFunc(f.Values, func(v string) bool {
			return slices.ContainsFunc(have, func(h string) bool { return wildcardMatch(v, h) })
		}) {
			return false, nil
		}
	}
	return true, nil
}

// wildcardMatch matches a filter value against a resource's: EC2 filter
// values take * (any characters) and ? (one character), and a backslash
// makes either literal
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Filtering.html).
// It runs in O(len(pattern)*len(s)) whatever the pattern, so a student's
// filter of many stars costs no more than a plain one.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		// The usual filter (an instance ID, a tag's value): no table to
		// build. The provider's DescribeInstances filters every instance
		// of a 1,000-node cluster this way.
		return pattern == s
	}
	type tok struct {
		r    rune
		kind byte // 'c' a literal, '*' or '?'
	}
	var p []tok
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == '\\' && i+1 < len(rs):
			i++
			p = append(p, tok{rs[i], 'c'})
		case rs[i] == '*' || rs[i] == '?':
			p = append(p, tok{kind: byte(rs[i])})
		default:
			p = append(p, tok{rs[i], 'c'})
		}
	}
	str := []rune(s)
	// prev[j]: p[:i] matches str[:j].
	prev := make([]bool, len(str)+1)
	prev[0] = true
	for _, t := range p {
		cur := make([]bool, len(str)+1)
		if t.kind == '*' {
			cur[0] = prev[0]
		}
		for j := 1; j <= len(str); j++ {
			switch t.kind {
			case '*':
				cur[j] = prev[j] || cur[j-1]
			case '?':
				cur[j] = prev[j-1]
			default:
				cur[j] = prev[j-1] && str[j-1] == t.r
			}
		}
		prev = cur
	}
	return prev[len(str)]
}

func summarizeFilters(fs []Filter) string {
	if len(fs) == 0 {
		return "all"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + strings.Join(f.Values, "|")
	}
	return summarize(parts)
}

// MatchFilters holds a resource to EC2 filters: fields are its values per
// filter name (known names are fields' keys), tags answer tag:<key> and
// tag-key. For the wire API's resources that the cloud keeps no list of
// (network interfaces, tags, regions).
func MatchFilters(filters []Filter, fields map[string][]string, tags map[string]string) (bool, error) {
	return matchFilters(filters, slices.Collect(maps.Keys(fields)), fields, tags)
}
