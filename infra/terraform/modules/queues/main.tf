# The SQS queues of BOXOFFICE_QUEUE_BACKEND=sqs: the claim queue and its dead-letter
# queue, and the events queue (BOXOFFICE_SQS_EVENTS_QUEUE_URL) with its own. The
# service module passes the URLs as BOXOFFICE_SQS_QUEUE_URL, BOXOFFICE_SQS_DLQ_URL and
# BOXOFFICE_SQS_EVENTS_QUEUE_URL; keep max_receive_count and visibility_timeout equal
# to BOXOFFICE_SQS_MAX_RECEIVE_COUNT and BOXOFFICE_SQS_VISIBILITY_TIMEOUT.

variable "name" {
  description = "Base name of the queues."
  type        = string
  default     = "boxoffice-claims"
}

variable "max_receive_count" {
  description = "Deliveries before a message moves to the dead-letter queue (BOXOFFICE_SQS_MAX_RECEIVE_COUNT)."
  type        = number
  default     = 5
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of received messages (BOXOFFICE_SQS_VISIBILITY_TIMEOUT)."
  type        = number
  default     = 30
}

resource "aws_sqs_queue" "claims_dlq" {
  name                      = "${var.name}-dlq"
  message_retention_seconds = 1209600 # 14 days: the operator's time to redrive
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "claims" {
  name                       = var.name
  visibility_timeout_seconds = var.visibility_timeout_seconds
  receive_wait_time_seconds  = 20
  message_retention_seconds  = 345600 # 4 days
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.claims_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_sqs_queue_redrive_allow_policy" "claims_dlq" {
  queue_url = aws_sqs_queue.claims_dlq.id
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.claims.arn]
  })
}

resource "aws_sqs_queue" "events_dlq" {
  name                      = "${var.name}-events-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

# Outbox events (ticket mail, webhooks to tenants): consumed by the work
# processes, at least once, idempotently.
resource "aws_sqs_queue" "events" {
  name                       = "${var.name}-events"
  visibility_timeout_seconds = var.visibility_timeout_seconds
  receive_wait_time_seconds  = 20
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.events_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

output "sqs_queue_url" {
  value = aws_sqs_queue.claims.url
}

output "sqs_dlq_url" {
  value = aws_sqs_queue.claims_dlq.url
}

output "sqs_events_queue_url" {
  value = aws_sqs_queue.events.url
}

output "claims_queue_name" {
  description = "For the workers' autoscaling on the age of the oldest message."
  value       = aws_sqs_queue.claims.name
}

output "queue_arns" {
  description = "Every queue, for the tasks' IAM policy."
  value = [aws_sqs_queue.claims.arn, aws_sqs_queue.claims_dlq.arn, aws_sqs_queue.events.arn,
  aws_sqs_queue.events_dlq.arn]
}
