package subscription

// Pattern is the value of the "pattern" field of a consumer's ids node. It is
// a plain string value, safe for concurrent use.
type Pattern string

// The patterns Kafka's ZooKeeper consumer writes. The static one is called
// StaticPattern because the name Static belongs to the constructor.
const (
	// StaticPattern subscribes to an explicit list of topics.
	StaticPattern Pattern = "static"
	// WhiteList subscribes to every topic matching a regular expression.
	WhiteList Pattern = "white_list"
	// BlackList subscribes to every topic not matching a regular expression.
	BlackList Pattern = "black_list"
)
