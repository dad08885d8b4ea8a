package zkdata

import "strconv"

// Controller is the decoded /controller node: which broker is the active
// controller. It is a plain value, safe for concurrent use.
type Controller struct {
	BrokerID int32
	Version  int
}

type controllerJSON struct {
	Version  int    `json:"version"`
	BrokerID *int32 `json:"brokerid"`
}

// ParseController decodes the data of /controller, for example
// {"version":1,"brokerid":1,"timestamp":"1440000000000"}. "brokerid" is
// required and non-negative; unknown fields are ignored. Errors wrap
// ErrMalformed. It is pure, safe for concurrent use, and does not block.
func ParseController(data []byte) (Controller, error) {
	const node = "controller"
	var raw controllerJSON
	if err := decodeObject(node, data, &raw); err != nil {
		return Controller{}, err
	}
	if raw.BrokerID == nil {
		return Controller{}, malformed(node, "brokerid", "", "missing")
	}
	if *raw.BrokerID < 0 {
		return Controller{}, malformed(node, "brokerid", strconv.FormatInt(int64(*raw.BrokerID), 10), "negative")
	}
	return Controller{BrokerID: *raw.BrokerID, Version: raw.Version}, nil
}
