// The lab's KafkaJS consumer, one process: a consumer.run() loop that logs as such applications do.
//
//     node labclient.js MODULES CONFIG.properties CONTROL LOG LEVEL
//
// MODULES is the node_modules directory holding kafkajs (the lab cache). Everything the process writes
// goes to LOG: KafkaJS's own default JSON lines (its console logger, byte for byte) and the application's
// lines, JSON too, under its own logger. LEVEL "debug" sets KafkaJS's logLevel to DEBUG. Faults come from
// outside: signals, and "stall <ms>" in the CONTROL file, read before each message (a slow downstream call
// awaited inside eachMessage: KafkaJS heartbeats between messages only, so the member sends none meanwhile).
'use strict'
const fs = require('fs')
const path = require('path')
const { Console } = require('console')

const [modules, configPath, control, logPath, level] = process.argv.slice(2)
const out = fs.createWriteStream(logPath, { flags: 'a' })
global.console = new Console({ stdout: out, stderr: out })
const { Kafka, logLevel } = require(path.join(modules, 'kafkajs'))

const props = {}
for (const line of fs.readFileSync(configPath, 'utf8').split('\n')) {
  const at = line.indexOf('=')
  if (at > 0 && !line.trimStart().startsWith('#')) props[line.slice(0, at).trim()] = line.slice(at + 1).trim()
}
const topic = props['lab.topic'] || 'orders'
const number = (key, fallback) => (props[key] ? parseInt(props[key], 10) : fallback)

function app (level, message) {
  console.log(JSON.stringify({ level, timestamp: new Date().toISOString(), logger: 'orders.worker', message }))
}

function controlCommand () {
  try {
    const text = fs.readFileSync(control, 'utf8').trim()
    fs.unlinkSync(control)
    return text
  } catch (e) {
    return ''
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const kafka = new Kafka({
  clientId: props['client.id'] || 'orders-worker',
  brokers: props['bootstrap.servers'].split(','),
  logLevel: level === 'debug' ? logLevel.DEBUG : logLevel.INFO
})
const consumer = kafka.consumer({
  groupId: props['group.id'],
  sessionTimeout: number('session.timeout.ms', 30000),
  heartbeatInterval: number('heartbeat.interval.ms', 3000),
  rebalanceTimeout: number('max.poll.interval.ms', 60000)
})

let processed = 0
let lastReport = Date.now()
let stopping = false

async function main () {
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  app('INFO', `consumer started for topic ${topic}`)
  setInterval(() => {
    const seconds = Math.round((Date.now() - lastReport) / 1000)
    app('INFO', `processed ${processed} records in the last ${seconds} s`)
    processed = 0
    lastReport = Date.now()
  }, 10000).unref()
  await consumer.run({
    eachMessage: async () => {
      processed += 1
      const command = controlCommand()
      if (command.startsWith('stall ')) {
        const ms = parseInt(command.split(' ')[1], 10)
        app('INFO', 'calling the downstream service for the current message')
        await sleep(ms)
        app('INFO', `downstream service answered after ${ms} ms`)
      }
    }
  })
}

async function stop () {
  if (stopping) return
  stopping = true
  app('INFO', 'closing the consumer')
  try {
    await consumer.disconnect()
  } finally {
    app('INFO', 'consumer closed')
    out.end(() => process.exit(0))
  }
}

process.on('SIGTERM', stop)
process.on('SIGINT', stop)
main().catch((e) => {
  app('ERROR', `consumer failed: ${e.stack || e}`)
  out.end(() => process.exit(1))
})
