package awsapi

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// TestPagination: DescribeSecurityGroups, DescribeSubnets and
// DescribeRouteTables page by MaxResults and NextToken, and Classic ELB
// DescribeLoadBalancers by PageSize and Marker, as AWS documents them
// (docs/aws.md, "Pagination"): the SDK's own paginators walk every page
// and meet each item once; a size out of the action's range or a token
// the lab did not give is refused.
func TestPagination(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	c, lb := l.ec2(), l.elb()
	for i := range 6 { // seven groups with the nodes': pages of 5 and 2
		if _, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(fmt.Sprintf("page-%d", i)),
			Description: aws.String("paged"), VpcId: aws.String(l.net.VPCID)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // three Classic ELBs: pages of 2 and 1
		if _, err := lb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{LoadBalancerName: aws.String(fmt.Sprintf("page%d", i)),
			Subnets: []string{l.net.Subnets[0].ID}, Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80,
				InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}}}); err != nil {
			t.Fatal(err)
		}
	}

	walks := []struct {
		name  string
		pages []int
		walk  func() ([]int, []string, error) // page sizes, every item's ID
		all   func() ([]string, error)        // one call, no paging asked for
	}{
		{"DescribeSecurityGroups", []int{5, 2}, func() ([]int, []string, error) {
			var sizes []int
			var ids []string
			p := ec2.NewDescribeSecurityGroupsPaginator(c, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(5)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					return nil, nil, err
				}
				sizes = append(sizes, len(out.SecurityGroups))
				for _, g := range out.SecurityGroups {
					ids = append(ids, aws.ToString(g.GroupId))
				}
			}
			return sizes, ids, nil
		}, func() ([]string, error) {
			out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
			var ids []string
			if err == nil {
				for _, g := range out.SecurityGroups {
					ids = append(ids, aws.ToString(g.GroupId))
				}
			}
			return ids, err
		}},
		{"DescribeSubnets", []int{len(l.net.Subnets)}, func() ([]int, []string, error) {
			var sizes []int
			var ids []string
			p := ec2.NewDescribeSubnetsPaginator(c, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					return nil, nil, err
				}
				sizes = append(sizes, len(out.Subnets))
				for _, s := range out.Subnets {
					ids = append(ids, aws.ToString(s.SubnetId))
				}
			}
			return sizes, ids, nil
		}, func() ([]string, error) {
			out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			var ids []string
			if err == nil {
				for _, s := range out.Subnets {
					ids = append(ids, aws.ToString(s.SubnetId))
				}
			}
			return ids, err
		}},
		{"DescribeRouteTables", []int{1}, func() ([]int, []string, error) {
			var sizes []int
			var ids []string
			p := ec2.NewDescribeRouteTablesPaginator(c, &ec2.DescribeRouteTablesInput{MaxResults: aws.Int32(100)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					return nil, nil, err
				}
				sizes = append(sizes, len(out.RouteTables))
				for _, r := range out.RouteTables {
					ids = append(ids, aws.ToString(r.RouteTableId))
				}
			}
			return sizes, ids, nil
		}, func() ([]string, error) {
			out, err := c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{})
			var ids []string
			if err == nil {
				for _, r := range out.RouteTables {
					ids = append(ids, aws.ToString(r.RouteTableId))
				}
			}
			return ids, err
		}},
		{"elb DescribeLoadBalancers", []int{2, 1}, func() ([]int, []string, error) {
			var sizes []int
			var ids []string
			p := elb.NewDescribeLoadBalancersPaginator(lb, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(2)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					return nil, nil, err
				}
				sizes = append(sizes, len(out.LoadBalancerDescriptions))
				for _, d := range out.LoadBalancerDescriptions {
					ids = append(ids, aws.ToString(d.LoadBalancerName))
				}
			}
			return sizes, ids, nil
		}, func() ([]string, error) {
			out, err := lb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
			var ids []string
			if err == nil {
				if out.NextMarker != nil {
					return nil, fmt.Errorf("NextMarker %q on the only page (the default page holds 400)", aws.ToString(out.NextMarker))
				}
				for _, d := range out.LoadBalancerDescriptions {
					ids = append(ids, aws.ToString(d.LoadBalancerName))
				}
			}
			return ids, err
		}},
	}
	for _, w := range walks {
		t.Run(w.name, func(t *testing.T) {
			sizes, ids, err := w.walk()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sizes, w.pages) {
				t.Errorf("pages of %v, want %v", sizes, w.pages)
			}
			all, err := w.all()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, all) {
				t.Errorf("the pages hold %v, one call %v", ids, all)
			}
		})
	}

	refusals := []struct {
		name, code string
		call       func() error
	}{
		{"DescribeSecurityGroups MaxResults 4", "InvalidParameterValue", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(4)})
			return err
		}},
		{"DescribeSecurityGroups bad token", "InvalidPaginationToken", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{NextToken: aws.String("nope")})
			return err
		}},
		{"DescribeSubnets MaxResults 1001", "InvalidParameterValue", func() error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(1001)})
			return err
		}},
		{"DescribeRouteTables MaxResults 101", "InvalidParameterValue", func() error {
			_, err := c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{MaxResults: aws.Int32(101)})
			return err
		}},
		{"elb PageSize 0", "ValidationError", func() error {
			_, err := lb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(0)})
			return err
		}},
		{"elb PageSize 401", "ValidationError", func() error {
			_, err := lb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(401)})
			return err
		}},
		{"elb bad Marker", "ValidationError", func() error {
			_, err := lb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{Marker: aws.String("nope")})
			return err
		}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) { wantCode(t, r.call(), r.code) })
	}
}
