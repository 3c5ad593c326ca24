// The lab's sarama consumer: a ConsumerGroup handler that logs as a Go service does.
//
//	labclient CONFIG.properties CONTROL LOG LEVEL
//
// sarama says nothing unless the application sets sarama.Logger (it discards by default); this one sets
// it as sarama's own examples do, log.New(os.Stderr, "[Sarama] ", log.LstdFlags), with the process's
// stderr being LOG (a container runtime's log of the process). sarama has one logger for everything (its
// DebugLogger writes to the same one), so LEVEL "debug" changes nothing. The application's own lines
// ("assigned: [...]", "processed N records ...") go through Go's log package with its standard flags.
// The lab drives faults from outside: signals, and "stall <ms>" in the CONTROL file, read while a claim is
// consumed (a slow downstream call; sarama heartbeats from its own goroutine meanwhile).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"labclient/common"
)

func partitions(claims map[string][]int32) string {
	var names []string
	for topic, parts := range claims {
		for _, p := range parts {
			names = append(names, fmt.Sprintf("%s-%d", topic, p))
		}
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ", ") + "]"
}

type handler struct {
	control   string
	processed *int64
}

func (h handler) Setup(session sarama.ConsumerGroupSession) error {
	log.Printf("assigned: %s", partitions(session.Claims()))
	return nil
}

func (h handler) Cleanup(session sarama.ConsumerGroupSession) error {
	log.Printf("revoked: %s", partitions(session.Claims()))
	return nil
}

func (h handler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case message, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			session.MarkMessage(message, "")
			atomic.AddInt64(h.processed, 1)
		case <-tick.C:
			common.StallIfAsked(h.control)
		case <-session.Context().Done():
			return nil
		}
	}
}

func main() {
	configPath, control, logPath, _ := common.Args()
	common.LogToStderr(logPath)
	sarama.Logger = log.New(os.Stderr, "[Sarama] ", log.LstdFlags)

	config := common.ReadProperties(configPath)
	topic := common.Topic(config)
	conf := sarama.NewConfig()
	if d, ok := common.Millis(config, "session.timeout.ms"); ok {
		conf.Consumer.Group.Session.Timeout = d
	}
	if d, ok := common.Millis(config, "heartbeat.interval.ms"); ok {
		conf.Consumer.Group.Heartbeat.Interval = d
	}
	if d, ok := common.Millis(config, "max.poll.interval.ms"); ok { // sarama's nearest: the rebalance timeout
		conf.Consumer.Group.Rebalance.Timeout = d
	}
	if id, ok := config["client.id"]; ok {
		conf.ClientID = id
	}
	if id, ok := config["group.instance.id"]; ok {
		conf.Consumer.Group.InstanceId = id
		conf.Version = sarama.V2_3_0_0 // static membership needs JoinGroup v5
	}
	if config["auto.offset.reset"] == "earliest" {
		conf.Consumer.Offsets.Initial = sarama.OffsetOldest
	}
	brokers := strings.Split(config["bootstrap.servers"], ",")
	group, err := sarama.NewConsumerGroup(brokers, config["group.id"], conf)
	if err != nil {
		log.Printf("consumer failed: %v", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; cancel() }()

	var processed int64
	go func() {
		lastReport := time.Now()
		for range time.Tick(10 * time.Second) {
			n := atomic.SwapInt64(&processed, 0)
			log.Printf("processed %d records in the last %d s", n, int(time.Since(lastReport).Seconds()))
			lastReport = time.Now()
		}
	}()
	log.Printf("consumer started for topic %s", topic)
	h := handler{control: control, processed: &processed}
	for ctx.Err() == nil {
		// Consume returns at the end of each session (a rebalance): a consumer calls it again
		if err := group.Consume(ctx, []string{topic}, h); err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				break
			}
			log.Printf("consumer error: %v", err)
			time.Sleep(time.Second)
		}
	}
	log.Printf("closing the consumer")
	if err := group.Close(); err != nil {
		log.Printf("close failed: %v", err)
	}
	log.Printf("consumer closed")
}
