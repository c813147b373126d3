import json, os, signal, sys, time, uuid
import pika

P = os.environ.get("BUS_PREFIX", "contracts")
SERVICE = os.environ.get("SERVICE_NAME", "catalog-service")
INSTANCE = f"{SERVICE}-{uuid.uuid4()}"
TTL_MS = 15000
CONTRACTS = [{
    "messageType": "GetProductQuery",
    "targetService": SERVICE,
    "inputSchema": {"type": "object", "properties": {"productId": {"type": "string"}}, "required": ["productId"]},
    "outputSchema": {"type": "object", "properties": {"productId": {"type": "string"}, "name": {"type": "string"}}},
    "requiredPermissions": ["products:read"],
}]
PRODUCTS = {"p1": {"productId": "p1", "name": "Sprocket"}}

params = pika.URLParameters(os.environ["BUS_URL"])
ME = params.credentials.username                         # stamped as user_id on replies and announcements
GATEWAY = os.environ.get("BUS_GATEWAY_USER", "guest" if ME == "guest" else "gateway")
conn = pika.BlockingConnection(params)
queue = f"{P}.svc.{SERVICE}"

def on_own_channel(action, expected=()):  # a refused step closes its channel only, not the one we consume on
    side = conn.channel()
    try:
        action(side)
        side.close()
    except pika.exceptions.ChannelClosedByBroker as refused:
        if refused.reply_code not in expected:  # an expected refusal is no problem: nothing to report
            print(f"[{SERVICE}] bus: {refused.reply_text}", file=sys.stderr)

announcements, replies = f"{P}.announcements.{SERVICE}", f"{P}.replies.{SERVICE}"  # ours: we only write them
# A per-service broker user may declare neither the exchanges nor its work queue: the broker definitions do.
on_own_channel(lambda c: [c.exchange_declare(name, exchange_type="topic", durable=True) for name in
                          (f"{P}.requests", f"{P}.discovery", f"{P}.announcements", announcements, replies)])
on_own_channel(lambda c: c.exchange_bind(f"{P}.announcements", announcements, routing_key=f"announce.{SERVICE}"))
on_own_channel(lambda c: c.queue_declare(queue, durable=False, auto_delete=False, arguments={"x-expires": 15000}))
ch = conn.channel()
ch.queue_declare(queue, passive=True)  # there, declared by us or by the definitions
ch.queue_bind(queue, f"{P}.requests", routing_key=SERVICE)
discover = ch.queue_declare("", exclusive=True, auto_delete=True).method.queue  # server-named: amq.gen-…
ch.queue_bind(discover, f"{P}.discovery", routing_key="discover")
ch.basic_qos(prefetch_count=16)

def announce(withdrawn=False):
    body = ({"service": SERVICE, "instanceId": INSTANCE, "withdrawn": True} if withdrawn else
            {"service": SERVICE, "instanceId": INSTANCE, "ttlMs": TTL_MS, "contracts": CONTRACTS})
    ch.basic_publish(announcements, f"announce.{SERVICE}", json.dumps(body),
                     pika.BasicProperties(content_type="application/json", user_id=ME))

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")  # W3C trace context and baggage (docs/bus-protocol.md)

def trace_context(headers):  # what opentelemetry-python's propagate.extract() reads; passed on, never dropped
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in headers.items() if k in TRACE_HEADERS}

def publish_reply(channel, props, reply, trace=None):  # to P.replies.<service>, routing key = reply_to as received
    channel.basic_publish(replies, props.reply_to, json.dumps(reply),
                          pika.BasicProperties(correlation_id=props.correlation_id, content_type="application/json",
                                               user_id=ME, headers=trace or None))

def handle(message_type, input, user):
    if message_type != "GetProductQuery":
        return {"ok": False, "error": {"code": "HANDLER_NOT_FOUND", "message": f"No handler for {message_type}"}}
    product = PRODUCTS.get(input.get("productId"))
    if product is None:
        return {"ok": False, "error": {"code": "NOT_FOUND", "message": "No such product",
                                       "resourceType": "Product", "resourceId": input.get("productId")}}
    return {"ok": True, "result": product}

def on_request(channel, method, props, body):
    if props.user_id != GATEWAY:  # published by someone else, straight to the queue: drop it, never reply
        channel.basic_ack(method.delivery_tag)
        return
    headers = props.headers or {}
    deadline = int(headers.get("deadline", 0))
    if deadline and time.time() * 1000 > deadline:  # the caller already got 504: skip the work
        channel.basic_ack(method.delivery_tag)
        return
    try:
        user = json.loads(headers["user"]) if "user" in headers else None
        reply = handle(props.type, json.loads(body)["input"], user)
    except Exception:
        print(f"[{headers.get('correlationId')}] handler failed", file=sys.stderr)  # log, never send, the cause
        reply = {"ok": False, "error": {"code": "INTERNAL_ERROR", "message": "Internal error"}}
    publish_reply(channel, props, reply, trace_context(headers))  # the request's trace goes on with the answer
    channel.basic_ack(method.delivery_tag)

def reannounce():  # the lease, every third of ttlMs; the binding is re-asserted with it
    announce()
    on_own_channel(lambda c: c.queue_bind(queue, f"{P}.requests", routing_key=SERVICE))
    conn.call_later(TTL_MS / 3000, reannounce)

def stop(*_):  # SIGTERM: withdraw, serve what was already routed for a second, then stop consuming
    announce(withdrawn=True)
    conn.call_later(1.0, lambda: ch.stop_consuming())

ch.basic_consume(queue, on_request)
ch.basic_consume(discover, lambda c, m, p, b: announce(), auto_ack=True)
signal.signal(signal.SIGTERM, lambda *a: conn.add_callback_threadsafe(stop))
announce()
conn.call_later(TTL_MS / 3000, reannounce)
print(f"[{SERVICE}] ready", flush=True)
ch.start_consuming()
# The last instance deletes the work queue (if_unused: refused, 406, while another instance consumes it), so
# requests get 503 at once instead of waiting for their deadline; one the definitions declared stays (refused, 403).
on_own_channel(lambda c: c.queue_delete(queue, if_unused=True), expected=(403, 406))
conn.close()
