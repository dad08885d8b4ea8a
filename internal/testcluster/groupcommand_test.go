package testcluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// describeOutput is the stdout of kafka-consumer-groups 3.9.2 --describe for
// a group without members, as captured from the tool.
const describeOutput = `
GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID
scrgroup        scr             0          3               5               2               -               -               -
scrgroup        scr             1          -               4               -               -               -               -
`

func TestParseGroupDescribe(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []testcluster.GroupRow
		err  string
	}{
		{"captured", describeOutput, []testcluster.GroupRow{
			{Topic: "scr", Partition: 0, CurrentOffset: 3, LogEndOffset: 5, Lag: 2, ConsumerID: "-", Host: "-", ClientID: "-"},
			{Topic: "scr", Partition: 1, CurrentOffset: -1, LogEndOffset: 4, Lag: -1, ConsumerID: "-", Host: "-", ClientID: "-"},
		}, ""},
		{"active member, client id with a space and negative lag",
			"Consumer group 'g' has no active members.\n\n" +
				"GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID        HOST       CLIENT-ID\n" +
				"g     t     12        100            90             -10 consumer-1-abc     /127.0.0.1 my client\n",
			[]testcluster.GroupRow{{Topic: "t", Partition: 12, CurrentOffset: 100, LogEndOffset: 90, Lag: -10,
				ConsumerID: "consumer-1-abc", Host: "/127.0.0.1", ClientID: "my client"}}, ""},
		{"empty", "", nil, ""},
		{"no members only", "Consumer group 'g' has no active members.\n", nil, ""},
		{"header only", "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n", nil, ""},
		{"no header", "something else\n", nil, "no table header"},
		{"short header", "GROUP TOPIC PARTITION\n", nil, "want columns"},
		{"wrong header", "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT\n", nil, `is "CLIENT"`},
		{"bad partition", "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n" +
			"g     t     x         1              1              0   -           -    -\n", nil, `PARTITION "x"`},
		{"bad offset", "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n" +
			"g     t     0         -7             1              0   -           -    -\n", nil, `CURRENT-OFFSET "-7"`},
		{"misaligned", "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n" +
			"g     toolongtopic 0 1 1 0 - - -\n", nil, "does not line up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testcluster.ParseGroupDescribe(tt.out)
			if tt.err != "" {
				if !errors.Is(err, testcluster.ErrGroupCommand) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want ErrGroupCommand containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("rows %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("row %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func FuzzParseGroupDescribe(f *testing.F) {
	f.Add(describeOutput)
	f.Add("GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\ng t 0 1 1 0 - - -\n")
	f.Add("Error: Consumer group 'x' does not exist.\n")
	f.Fuzz(func(t *testing.T, out string) {
		rows, err := testcluster.ParseGroupDescribe(out)
		if err != nil {
			if !errors.Is(err, testcluster.ErrGroupCommand) {
				t.Fatalf("error %v does not wrap ErrGroupCommand", err)
			}
			return
		}
		for _, r := range rows {
			if r.Topic == "" || r.Partition < 0 || r.CurrentOffset < -1 || r.LogEndOffset < -1 {
				t.Fatalf("invalid row %+v", r)
			}
		}
	})
}

// TestDescribeGroup commits offsets with sarama as a simple group and reads
// them back with Kafka's own tool.
func TestDescribeGroup(t *testing.T) {
	c := testcluster.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic, group := testcluster.Name(t, "topic"), testcluster.Name(t, "group")
	testcluster.MustCreateTopic(t, c, topic, 3, 3)
	produced, err := c.Produce(topic, 3, 0, 12)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := c.DescribeGroup(ctx, group); !errors.Is(err, testcluster.ErrGroupCommand) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("describe of an unknown group: %v", err)
	}

	cfg := testcluster.SaramaConfig()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	client, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[int32]int64{0: 1, 2: 4}
	for p, off := range committed {
		pom, err := om.ManagePartition(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		pom.MarkOffset(off, "")
		defer pom.Close() // after om.Close: see sarama issue 2298
	}
	om.Commit()
	defer om.Close()

	start := time.Now()
	rows, err := c.DescribeGroup(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-consumer-groups took %v: %+v", time.Since(start).Round(time.Millisecond), rows)
	if len(rows) != len(committed) {
		t.Fatalf("rows %+v, want partitions %v", rows, committed)
	}
	for _, r := range rows {
		want, ok := committed[r.Partition]
		leo := produced.PerPartition[r.Partition]
		if !ok || r.Topic != topic || r.CurrentOffset != want || r.LogEndOffset != leo || r.Lag != leo-want {
			t.Fatalf("row %+v, want %s/%d at %d of %d", r, topic, r.Partition, want, leo)
		}
		if r.ConsumerID != "-" {
			t.Fatalf("row %+v has a member", r)
		}
	}
}
