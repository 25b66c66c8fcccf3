package awsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// state is everything a refused request could have changed, as JSON.
func state(t *testing.T, c *cloud.Cloud) string {
	t.Helper()
	ctx := cloud.WithCaller(context.Background(), "state")
	var parts []any
	add := func(v any, err error) {
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, v)
	}
	add(c.DescribeInstancesAWS(ctx, nil, nil))
	add(c.DescribeSecurityGroupsAWS(ctx, nil, nil))
	add(c.DescribeSubnets(ctx, nil, nil))
	add(c.DescribeELBs(ctx, nil))
	add(c.ELBTags(ctx, []string{"e1"}))
	nlbs, err := c.DescribeNLBs(ctx, nil, nil)
	add(nlbs, err)
	add(c.DescribeTargetGroups(ctx, nil, "", nil))
	var arns []string
	for _, n := range nlbs {
		arns = append(arns, n.ARN)
	}
	add(c.ELBv2Tags(ctx, arns, nil))
	b, err := json.Marshal(parts)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBadInput is the API's list of bad inputs: names and values AWS
// refuses, each answered with AWS's code for it, in the service's error
// document, with nothing stored and nothing in the call log. Every
// request is signed with a key the lab issued: the refusals are the
// codec's and the actions', not the signature check's.
func TestBadInput(t *testing.T) {
	l := newLab(t)
	h, err := New(Config{Cloud: l.cloud, Keys: l.keys, Clock: testingclock.NewFakePassiveClock(authNow)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := cloud.WithCaller(context.Background(), "setup")
	if _, err := l.cloud.CreateELB(ctx, cloud.CreateELBInput{Name: "e1", Subnets: []string{l.net.Subnets[0].ID},
		Listeners: []cloud.ELBListener{{Protocol: "TCP", Port: 80, InstanceProtocol: "TCP", InstancePort: 30080}}}); err != nil {
		t.Fatal(err)
	}
	nlb, err := l.cloud.CreateNLB(ctx, cloud.CreateNLBInput{Name: "n1", Subnets: []string{l.net.Subnets[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	inst := l.inst[0].ID
	ec2q := func(action string, kv ...string) req {
		return req{version: VersionEC2, action: action, params: pairs(kv...)}
	}
	elbq := func(action string, kv ...string) req {
		return req{version: VersionELB, action: action, params: pairs(kv...)}
	}
	v2q := func(action string, kv ...string) req {
		return req{version: VersionELBv2, action: action, params: pairs(kv...)}
	}
	dots := strings.Repeat(".", 1_000_000)
	for _, tc := range []struct {
		name   string
		q      req
		status int
		code   string
	}{
		// Parameter names.
		{"EC2 a name of a million dots", ec2q("DescribeInstances", dots, "x"), 400, "InvalidQueryParameter"},
		{"ELB a name of a million dots", elbq("DescribeLoadBalancers", dots, "x"), 400, "InvalidQueryParameter"},
		{"ELBv2 a name of a million dots", v2q("DescribeLoadBalancers", dots, "x"), 400, "InvalidQueryParameter"},
		{"a name of a million letters", ec2q("DescribeInstances", strings.Repeat("A", 1_000_000), "x"), 400, "InvalidQueryParameter"},
		{"a name longer than any parameter's", ec2q("DescribeInstances", "Filter.1."+strings.Repeat("Name", 70), "x"), 400, "InvalidQueryParameter"},
		{"a NUL in a name", ec2q("DescribeInstances", "Filter.1.Na\x00me", "x"), 400, "InvalidQueryParameter"},
		{"a bracket in a name", ec2q("DescribeInstances", "Filter[1].Name", "x"), 400, "InvalidQueryParameter"},
		{"an empty segment", ec2q("DescribeInstances", "Filter..Name", "x"), 400, "InvalidQueryParameter"},
		{"a trailing dot", ec2q("DescribeInstances", "InstanceId.1.", inst), 400, "InvalidQueryParameter"},
		{"EC2 an unknown parameter", ec2q("DescribeInstances", "Bogus", "x"), 400, "UnknownParameter"},
		{"EC2 an unknown field", ec2q("DescribeInstances", "Filter.1.Bogus", "x"), 400, "UnknownParameter"},
		{"another action's parameter", ec2q("DescribeVpcs", "InstanceId.1", inst), 400, "UnknownParameter"},
		{"an index with a leading zero", ec2q("DescribeInstances", "InstanceId.01", inst), 400, "UnknownParameter"},
		{"index 0", ec2q("DescribeInstances", "InstanceId.0", inst), 400, "UnknownParameter"},
		{"an index of seven digits", ec2q("DescribeInstances", "InstanceId.1000000", inst), 400, "UnknownParameter"},
		{"a value for a structure", ec2q("DescribeInstances", "Filter.1", "x"), 400, "UnknownParameter"},
		{"a value for a list", ec2q("DescribeInstances", "InstanceId", inst), 400, "UnknownParameter"},
		{"ELBv2 a value for a list", v2q("CreateLoadBalancer", "Name", "n2", "SecurityGroups", "sg-1"), 400, "InvalidQueryParameter"},
		{"a field of a scalar", ec2q("DescribeInstances", "DryRun.Value", "true"), 400, "UnknownParameter"},
		{"ELB's list spelling in EC2", ec2q("DescribeInstances", "InstanceId.member.1", inst), 400, "UnknownParameter"},
		{"EC2's list spelling in ELB", elbq("DescribeLoadBalancers", "LoadBalancerNames.1", "e1"), 400, "InvalidQueryParameter"},
		{"ELB an unknown parameter", elbq("DescribeLoadBalancers", "Bogus", "x"), 400, "InvalidQueryParameter"},
		{"ELBv2 an unknown parameter", v2q("DescribeLoadBalancers", "Names.member.1.Bogus", "x"), 400, "InvalidQueryParameter"},

		// Values: characters.
		{"a NUL in an EC2 tag key", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "te\x00am", "Tag.1.Value", "x"), 400, "InvalidCharacter"},
		{"a NUL in an EC2 tag value", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "team", "Tag.1.Value", "x\x00"), 400, "InvalidCharacter"},
		{"an escape in an EC2 tag key", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "\x1b[31mred", "Tag.1.Value", "x"), 400, "InvalidCharacter"},
		{"DEL in an EC2 tag value", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "team", "Tag.1.Value", "x\x7f"), 400, "InvalidCharacter"},
		{"a C1 control in an EC2 tag value", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "team", "Tag.1.Value", "x\u0085"), 400, "InvalidCharacter"},
		{"invalid UTF-8 in an EC2 tag value", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "team", "Tag.1.Value", "x\xff\xfe"), 400, "InvalidCharacter"},
		{"a noncharacter in an EC2 tag value", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "team", "Tag.1.Value", "x\uffff"), 400, "InvalidCharacter"},
		{"a NUL in a security group's name", ec2q("CreateSecurityGroup", "GroupName", "web\x00", "GroupDescription", "d", "VpcId", l.net.VPCID), 400, "InvalidCharacter"},
		{"a NUL in an instance ID", ec2q("DescribeInstances", "InstanceId.1", inst+"\x00"), 400, "InvalidCharacter"},
		{"a NUL in an ELB tag key", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "a\x00", "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"a NUL in an ELB name", elbq("DeleteLoadBalancer", "LoadBalancerName", "e1\x00"), 400, "ValidationError"},
		{"a NUL in an ELBv2 tag value", v2q("AddTags", "ResourceArns.member.1", nlb.ARN, "Tags.member.1.Key", "k", "Tags.member.1.Value", "\x00"), 400, "ValidationError"},

		// Values: ELB's and ELBv2's tag pattern and lengths.
		{"ELB a tag key with '#'", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "a#b", "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"ELB a tag value with a tab", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "k", "Tags.member.1.Value", "a\tb"), 400, "ValidationError"},
		{"ELB an empty tag key", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "", "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"ELB a tag key of 129 characters", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", strings.Repeat("k", 129), "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"ELB a tag value of 257 characters", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "k", "Tags.member.1.Value", strings.Repeat("v", 257)), 400, "ValidationError"},
		{"ELB a new load balancer's tag with '!'", elbq("CreateLoadBalancer", "LoadBalancerName", "e2", "Subnets.member.1", l.net.Subnets[0].ID,
			"Listeners.member.1.Protocol", "TCP", "Listeners.member.1.LoadBalancerPort", "80", "Listeners.member.1.InstancePort", "30080",
			"Tags.member.1.Key", "a!", "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"ELBv2 a tag key with '<'", v2q("AddTags", "ResourceArns.member.1", nlb.ARN, "Tags.member.1.Key", "<script>", "Tags.member.1.Value", "x"), 400, "ValidationError"},
		{"ELBv2 a new target group's tag with '*'", v2q("CreateTargetGroup", "Name", "t2", "Protocol", "TCP", "Port", "30081", "VpcId", l.net.VPCID,
			"Tags.member.1.Key", "*", "Tags.member.1.Value", "x"), 400, "ValidationError"},

		// Values: types.
		{"EC2 not an integer", ec2q("DescribeInstances", "MaxResults", "x"), 400, "InvalidParameterValue"},
		{"EC2 an integer past int32", ec2q("AuthorizeSecurityGroupIngress", "GroupId", l.net.NodeGroupID, "IpPermissions.1.IpProtocol", "tcp",
			"IpPermissions.1.FromPort", "99999999999", "IpPermissions.1.ToPort", "80"), 400, "InvalidParameterValue"},
		{"EC2 not a boolean", ec2q("DescribeInstances", "DryRun", "maybe"), 400, "InvalidParameterValue"},
		{"ELB not an integer", elbq("CreateLoadBalancerListeners", "LoadBalancerName", "e1", "Listeners.member.1.Protocol", "TCP",
			"Listeners.member.1.LoadBalancerPort", "eighty", "Listeners.member.1.InstancePort", "30080"), 400, "ValidationError"},

		// Forms.
		{"a form that does not parse", req{version: VersionEC2, action: "DescribeVpcs", raw: "Action=DescribeVpcs&Version=" + VersionEC2 + "&x=%zz"}, 400, "MalformedQueryString"},
		{"a form over 1 MiB", req{version: VersionEC2, action: "DescribeVpcs", raw: "Action=DescribeVpcs&Version=" + VersionEC2 + "&x=" + strings.Repeat("a", maxBody)}, 400, "MalformedQueryString"},

		// What AWS takes, for contrast: EC2 takes any printable character
		// in a tag, a tab too; ELB takes the letters of any script.
		{"EC2 a tag of punctuation, Japanese and a tab", ec2q("CreateTags", "ResourceId.1", inst, "Tag.1.Key", "チーム #1", "Tag.1.Value", "青\t<&>"), 200, ""},
		{"ELB a tag in Japanese", elbq("AddTags", "LoadBalancerNames.member.1", "e1", "Tags.member.1.Key", "チーム", "Tags.member.1.Value", "青 組"), 200, ""},
		// An empty list is its bare name, as the SDK writes it (the
		// upstream provider's NLB without security groups).
		{"ELBv2 an empty list", v2q("DescribeLoadBalancers", "Names", ""), 200, ""},
		{"EC2 an empty list", ec2q("DescribeInstances", "InstanceId", ""), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := state(t, l.cloud)
			calls := len(l.cloud.Calls(0))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, l.build(t, tc.q))
			body := html.UnescapeString(w.Body.String())
			if w.Code != tc.status || tc.code != "" && !strings.Contains(body, "<Code>"+tc.code+"</Code>") {
				t.Fatalf("status %d body %.500s; want %d %s", w.Code, body, tc.status, tc.code)
			}
			if tc.status != 200 {
				if got := l.cloud.Calls(0)[calls:]; len(got) != 0 {
					t.Fatalf("a refused request is in the call log: %+v", got)
				}
				if after := state(t, l.cloud); after != before {
					t.Fatalf("a refused request changed the cloud:\nbefore %s\nafter  %s", before, after)
				}
			}
		})
	}
}

func pairs(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// TestCodecWorkIsLinear: the work of reading a form (names checked,
// values scanned, prefixes indexed) grows with the form's size and no
// faster, whatever its shape. The work is counted, not timed. The old
// prefix index hashed every dotted prefix of every name, a million-dot
// name's half a million million bytes.
func TestCodecWorkIsLinear(t *testing.T) {
	l := newLab(t)
	c := l.h.services[VersionEC2].codec
	in := reflect.TypeFor[ec2.DescribeInstancesInput]()
	shapes := map[string]func(n int) url.Values{
		"one name of n dots":     func(n int) url.Values { return url.Values{strings.Repeat(".", n): {"x"}} },
		"one name of n letters":  func(n int) url.Values { return url.Values{strings.Repeat("A", n): {"x"}} },
		"n/8 short dotted names": func(n int) url.Values { return many(n/8, func(i int) string { return "A.B.C." + strconv.Itoa(i) }) },
		"n/16 valid list elements": func(n int) url.Values {
			return many(n/16, func(i int) string { return "InstanceId." + strconv.Itoa(i+1) })
		},
		"n/32 valid filters": func(n int) url.Values {
			v := url.Values{}
			for i := range n / 32 {
				v.Set(fmt.Sprintf("Filter.%d.Name", i+1), "tag-key")
				v.Set(fmt.Sprintf("Filter.%d.Value.1", i+1), "k")
			}
			return v
		},
		"one value of n bytes": func(n int) url.Values { return url.Values{"InstanceId.1": {strings.Repeat("i", n)}} },
	}
	size := func(v url.Values) int {
		n := 0
		for k, vs := range v {
			for _, s := range vs {
				n += len(k) + len(s) + 2
			}
		}
		return n
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{1 << 12, 1 << 16, 1 << 20} {
				form := shape(n)
				q, _ := c.newQuery(form, in)
				if bytes := size(form); q.work > 4*bytes+64 {
					t.Fatalf("n=%d: %d units of work for a form of %d bytes", n, q.work, bytes)
				}
			}
		})
	}
}

func many(n int, name func(i int) string) url.Values {
	v := url.Values{}
	for i := range n {
		v.Set(name(i), "x")
	}
	return v
}

// BenchmarkMillionDotName is the whole request of the finding, signed:
// read, verified and refused.
func BenchmarkMillionDotName(b *testing.B) {
	l := newLab(b)
	h, err := New(Config{Cloud: l.cloud, Keys: l.keys, Clock: testingclock.NewFakePassiveClock(authNow)})
	if err != nil {
		b.Fatal(err)
	}
	q := req{version: VersionEC2, action: "DescribeInstances", params: url.Values{strings.Repeat(".", 1_000_000): {"x"}}}
	for b.Loop() {
		b.StopTimer()
		r := l.build(b, q)
		b.StartTimer()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 400 {
			b.Fatalf("status %d", w.Code)
		}
	}
}
