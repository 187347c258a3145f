package lb

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"net/http"
)

// elbv2Namespace is the XML namespace of every ELBv2 answer.
const elbv2Namespace = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

// queryError is an AWS Query protocol error answer.
type queryError struct {
	// Status is the HTTP status (400 for the caller's faults, 403 for
	// authentication, 500 for the server's).
	Status int
	// Code is the AWS error code, e.g. TargetGroupNotFound.
	Code string
	// Message explains it.
	Message string
}

func (e *queryError) Error() string { return e.Code + ": " + e.Message }

type xmlErrorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Error     xmlError `xml:"Error"`
	RequestID string   `xml:"RequestId"`
}

type xmlError struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// xmlResponse is <ActionResponse><ActionResult>…</ActionResult>
// <ResponseMetadata><RequestId/></ResponseMetadata></ActionResponse>.
type xmlResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	Result    any
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

// resultName is the element name of an action's result.
func resultName(action string) xml.Name { return xml.Name{Local: action + "Result"} }

// xmlEmpty is the empty result of RegisterTargets and DeregisterTargets.
type xmlEmpty struct {
	XMLName xml.Name
}

type xmlTarget struct {
	ID   string `xml:"Id"`
	Port int    `xml:"Port,omitempty"`
}

type xmlTargetHealth struct {
	State       string `xml:"State"`
	Reason      string `xml:"Reason,omitempty"`
	Description string `xml:"Description,omitempty"`
}

type xmlTargetHealthDescription struct {
	HealthCheckPort string          `xml:"HealthCheckPort,omitempty"`
	Target          xmlTarget       `xml:"Target"`
	TargetHealth    xmlTargetHealth `xml:"TargetHealth"`
}

type xmlDescribeTargetHealth struct {
	XMLName      xml.Name
	Descriptions []xmlTargetHealthDescription `xml:"TargetHealthDescriptions>member"`
}

type xmlMatcher struct {
	HTTPCode string `xml:"HttpCode"`
}

type xmlTargetGroup struct {
	TargetGroupArn             string     `xml:"TargetGroupArn"`
	TargetGroupName            string     `xml:"TargetGroupName"`
	Protocol                   string     `xml:"Protocol"`
	ProtocolVersion            string     `xml:"ProtocolVersion"`
	HealthCheckProtocol        string     `xml:"HealthCheckProtocol"`
	HealthCheckPort            string     `xml:"HealthCheckPort"`
	HealthCheckEnabled         bool       `xml:"HealthCheckEnabled"`
	HealthCheckIntervalSeconds int        `xml:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  int        `xml:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      int        `xml:"HealthyThresholdCount"`
	UnhealthyThresholdCount    int        `xml:"UnhealthyThresholdCount"`
	HealthCheckPath            string     `xml:"HealthCheckPath"`
	Matcher                    xmlMatcher `xml:"Matcher"`
	LoadBalancerArns           []string   `xml:"LoadBalancerArns>member"`
	TargetType                 string     `xml:"TargetType"`
	IPAddressType              string     `xml:"IpAddressType"`
}

type xmlTargetGroups struct {
	XMLName      xml.Name
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
}

type xmlAttribute struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlAttributes struct {
	XMLName    xml.Name
	Attributes []xmlAttribute `xml:"Attributes>member"`
}

// newRequestID returns a request id shaped like AWS's (a UUID).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// writeQueryResult answers action with result, whose XMLName must be
// resultName(action).
func writeQueryResult(w http.ResponseWriter, action, requestID string, result any) {
	resp := xmlResponse{
		XMLName:   xml.Name{Local: action + "Response"},
		Xmlns:     elbv2Namespace,
		Result:    result,
		RequestID: requestID,
	}
	writeXML(w, http.StatusOK, requestID, resp)
}

func writeQueryError(w http.ResponseWriter, requestID string, e *queryError) {
	typ := "Sender"
	if e.Status >= 500 {
		typ = "Receiver"
	}
	writeXML(w, e.Status, requestID, xmlErrorResponse{Xmlns: elbv2Namespace,
		Error: xmlError{Type: typ, Code: e.Code, Message: e.Message}, RequestID: requestID})
}

func writeXML(w http.ResponseWriter, status int, requestID string, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`<ErrorResponse xmlns="` + elbv2Namespace + `"><Error><Type>Receiver</Type><Code>InternalFailure</Code><Message>encode answer</Message></Error></ErrorResponse>`)
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}
