package publish

import "errors"

// ErrRouter wraps load balancer failures during a switch. With a load
// balancer (GateConfig.Router, an lbport.Driver: the embedded LB, an ALB
// target group) the gate publishes blue-green: the load balancer keeps
// sending requests to the serving machines until the new release is judged
// live. A machine's target is its id and address.
var ErrRouter = errors.New("router")
