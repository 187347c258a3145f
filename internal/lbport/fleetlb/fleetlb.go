// Package fleetlb opens the lbport.Driver a mythex.yml names
// (load_balancer.kind) and says which target each host is in it.
package fleetlb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/alb"
	"github.com/mythex/mythex/internal/lbport/embedded"
)

// Options are what Open needs beyond mythex.yml.
type Options struct {
	// EmbeddedToken is the embedded LB's admin bearer token (kind embedded).
	EmbeddedToken string
	// Credentials replace the AWS SDK's default chain (kind alb) when not
	// nil: the demo and tests pass them; users never do.
	Credentials aws.CredentialsProvider
}

// Open returns the driver of lbc.Kind: embedded (the admin API at
// admin_listen) or alb (target_group_arn, region, endpoint). Other kinds, and
// an alb without its ARN, are a *fleet.FieldError (matching fleet.ErrInvalid)
// naming the field.
func Open(ctx context.Context, lbc fleet.LoadBalancer, o Options) (lbport.Driver, error) {
	switch lbc.Kind {
	case fleet.KindEmbedded:
		d := embedded.New(lbapi.NewClient("http://"+lbc.AdminListen, o.EmbeddedToken, nil))
		d.HealthyThreshold = lbc.HealthCheck.HealthyThreshold
		return d, nil
	case fleet.KindALB:
		if lbc.TargetGroupARN == "" {
			return nil, &fleet.FieldError{Field: "load_balancer.target_group_arn",
				Msg: "is not set: kind alb needs the target group's ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)"}
		}
		d, err := alb.New(ctx, alb.Config{TargetGroupARN: lbc.TargetGroupARN, Region: lbc.Region, Endpoint: lbc.Endpoint, Credentials: o.Credentials})
		if errors.Is(err, alb.ErrConfig) {
			field := "load_balancer.target_group_arn"
			if strings.Contains(err.Error(), "load_balancer.region") {
				field = "load_balancer.region"
			}
			return nil, &fleet.FieldError{Field: field, Msg: err.Error()}
		}
		return d, err
	}
	return nil, &fleet.FieldError{Field: "load_balancer.kind",
		Msg: fmt.Sprintf("%q: mythex drives embedded and alb load balancers (haproxy comes with its own driver); other kinds it only checks", lbc.Kind)}
}

// Ref is host h's target in the load balancer of kind lbc.Kind: for the
// embedded LB its name and target; for an ALB the id hosts[].target_id
// (default: the host part of target) and target's port.
func Ref(lbc fleet.LoadBalancer, h fleet.Host) lbport.TargetRef {
	if lbc.Kind != fleet.KindALB {
		return lbport.TargetRef{ID: h.Name, Address: h.Target}
	}
	id := h.TargetID
	if id == "" {
		if host, _, err := net.SplitHostPort(h.Target); err == nil {
			id = host
		}
	}
	return lbport.TargetRef{ID: id, Address: h.Target}
}
