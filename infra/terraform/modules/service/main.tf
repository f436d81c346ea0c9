# The application on ECS Fargate: one image (tag = commit), three task
# definitions — `serve` behind the load balancer, `work`, and `migrate`,
# run once per deploy before the services roll (the seed's rule) — with
# the secrets from Secrets Manager, logs in CloudWatch, and autoscaling:
# the API on requests per task and CPU, the workers on the age of the
# oldest claim message.

variable "name" {
  type = string
}

variable "vpc_id" {
  type = string
}

variable "public_subnet_ids" {
  type = list(string)
}

variable "private_subnet_ids" {
  type = list(string)
}

variable "tasks_security_group_id" {
  description = "From the network module."
  type        = string
}

variable "image" {
  description = "The repository, without tag."
  type        = string
}

variable "image_tag" {
  description = "The commit to run (the image is tagged with it)."
  type        = string
}

variable "certificate_arn" {
  description = "The API's TLS certificate (ACM, this region)."
  type        = string
}

variable "database_url" {
  description = "From the database module: no password in it."
  type        = string
}

variable "database_password_secret_arn" {
  type = string
}

variable "queue_backend" {
  description = "river or sqs (docs/operations.md: when to move to SQS)."
  type        = string
  default     = "sqs"
}

variable "sqs" {
  description = "The queues module's outputs."
  type = object({
    queue_url        = string
    dlq_url          = string
    events_queue_url = string
    claims_queue     = string
    arns             = list(string)
  })
}

variable "stores_bucket" {
  type = string
}

variable "stores_bucket_arn" {
  type = string
}

variable "api" {
  description = "API tasks: size and bounds. One task of 1 vCPU answers a few thousand reservations a second (docs/operations.md \"Sizing\")."
  type = object({
    cpu          = number
    memory       = number
    min          = number
    max          = number
    db_max_conns = number
  })
  default = { cpu = 1024, memory = 2048, min = 3, max = 30, db_max_conns = 20 }
}

variable "work" {
  description = "Worker tasks: size and bounds."
  type = object({
    cpu          = number
    memory       = number
    min          = number
    max          = number
    db_max_conns = number
  })
  default = { cpu = 1024, memory = 2048, min = 2, max = 12, db_max_conns = 20 }
}

variable "extra_environment" {
  description = "More configuration (docs/configuration.md): name => value."
  type        = map(string)
  default     = {}
}

data "aws_region" "current" {}

# Secrets: created here, their values put by the operator
# (aws secretsmanager put-secret-value), never in state.
locals {
  secrets = {
    BOXOFFICE_ADMIN_KEY           = "admin-key"
    BOXOFFICE_WEBHOOK_SECRETS     = "webhook-secrets"
    BOXOFFICE_TICKET_SECRET       = "ticket-secret"
    BOXOFFICE_ACCESS_TOKEN_SECRET = "access-token-secret"
    BOXOFFICE_SECRETS_KEY         = "secrets-key"
    BOXOFFICE_STRIPE_SECRET_KEY   = "stripe-secret-key"
  }
}

resource "aws_secretsmanager_secret" "app" {
  for_each = local.secrets
  name     = "${var.name}/${each.value}"
}

locals {
  environment = merge({
    DATABASE_URL                   = var.database_url
    BOXOFFICE_ADDR                 = "0.0.0.0:8080"
    BOXOFFICE_METRICS_ADDR         = "0.0.0.0:9090"
    BOXOFFICE_QUEUE_BACKEND        = var.queue_backend
    AWS_REGION                     = data.aws_region.current.name
    BOXOFFICE_SQS_QUEUE_URL        = var.sqs.queue_url
    BOXOFFICE_SQS_DLQ_URL          = var.sqs.dlq_url
    BOXOFFICE_SQS_EVENTS_QUEUE_URL = var.sqs.events_queue_url
    BOXOFFICE_STORE_BUCKET         = var.stores_bucket
    BOXOFFICE_PAYMENT_PROVIDER     = "stripe"
    # The load balancer's addresses are the only proxies believed.
    BOXOFFICE_TRUSTED_PROXIES = join(",", data.aws_subnet.public[*].cidr_block)
  }, var.extra_environment)
  secret_refs = concat(
    [for env, s in aws_secretsmanager_secret.app : { name = env, valueFrom = s.arn }],
    [{ name = "PGPASSWORD", valueFrom = "${var.database_password_secret_arn}:password::" }],
  )
}

data "aws_subnet" "public" {
  count = length(var.public_subnet_ids)
  id    = var.public_subnet_ids[count.index]
}

resource "aws_ecs_cluster" "main" {
  name = var.name
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_cloudwatch_log_group" "app" {
  name              = "/ecs/${var.name}"
  retention_in_days = 30
}

# --- IAM: the execution role pulls the image and reads the secrets; the
# task role is what the process may do (queues, the stores' bucket).

data "aws_iam_policy_document" "ecs_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "execution" {
  name               = "${var.name}-execution"
  assume_role_policy = data.aws_iam_policy_document.ecs_assume.json
}

resource "aws_iam_role_policy_attachment" "execution" {
  role       = aws_iam_role.execution.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
}

resource "aws_iam_role_policy" "execution_secrets" {
  name = "read-secrets"
  role = aws_iam_role.execution.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["secretsmanager:GetSecretValue"]
      Resource = concat([for s in aws_secretsmanager_secret.app : s.arn], [var.database_password_secret_arn])
    }]
  })
}

resource "aws_iam_role" "task" {
  name               = "${var.name}-task"
  assume_role_policy = data.aws_iam_policy_document.ecs_assume.json
}

resource "aws_iam_role_policy" "task" {
  name = "boxoffice"
  role = aws_iam_role.task.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Effect = "Allow"
        Action = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks"]
        Resource = var.sqs.arns
      },
      {
        Effect   = "Allow"
        Action   = ["s3:PutObject", "s3:GetObject"]
        Resource = "${var.stores_bucket_arn}/*"
      },
    ]
  })
}

# --- Task definitions: one image, a command each.

locals {
  container = {
    for role, c in {
      serve   = { cpu = var.api.cpu, memory = var.api.memory, conns = var.api.db_max_conns, ports = true }
      work    = { cpu = var.work.cpu, memory = var.work.memory, conns = var.work.db_max_conns, ports = false }
      migrate = { cpu = 256, memory = 512, conns = 4, ports = false }
      } : role => {
      cpu    = c.cpu
      memory = c.memory
      definition = jsonencode([{
        name      = role
        image     = "${var.image}:${var.image_tag}"
        command   = [role]
        essential = true
        environment = [for k, v in merge(local.environment, {
          BOXOFFICE_DB_MAX_CONNS = tostring(c.conns)
          # Every session opened at start: an opening's first second must
          # not wait for new database sessions.
          BOXOFFICE_DB_MIN_CONNS = tostring(c.conns)
        }) : { name = k, value = v }]
        secrets = local.secret_refs
        portMappings = c.ports ? [{ containerPort = 8080, protocol = "tcp" }, { containerPort = 9090, protocol = "tcp" }] : (
        role == "work" ? [{ containerPort = 9090, protocol = "tcp" }] : [])
        readonlyRootFilesystem = true
        # A rolling deploy sends SIGTERM: in-flight accepts finish, claim
        # batches commit, then the process exits; 60 s before SIGKILL.
        stopTimeout = 60
        logConfiguration = {
          logDriver = "awslogs"
          options = {
            awslogs-group         = aws_cloudwatch_log_group.app.name
            awslogs-region        = data.aws_region.current.name
            awslogs-stream-prefix = role
          }
        }
      }])
    }
  }
}

resource "aws_ecs_task_definition" "app" {
  for_each                 = local.container
  family                   = "${var.name}-${each.key}"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = each.value.cpu
  memory                   = each.value.memory
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = aws_iam_role.task.arn
  container_definitions    = each.value.definition
  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = "X86_64"
  }
}

# --- Network: the load balancer in the public subnets, tasks in the
# private ones.

resource "aws_security_group" "alb" {
  name   = "${var.name}-alb"
  vpc_id = var.vpc_id
  ingress {
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

# The tasks' security group comes from the network module (the database
# admits it, and the database must exist before the tasks); the load
# balancer's way in is added here.
resource "aws_vpc_security_group_ingress_rule" "alb_to_tasks" {
  security_group_id            = var.tasks_security_group_id
  referenced_security_group_id = aws_security_group.alb.id
  from_port                    = 8080
  to_port                      = 8080
  ip_protocol                  = "tcp"
}

resource "aws_lb" "api" {
  name               = var.name
  load_balancer_type = "application"
  subnets            = var.public_subnet_ids
  security_groups    = [aws_security_group.alb.id]
  # Server-sent events (availability, the console's sale stream) stay open.
  idle_timeout = 3600
}

resource "aws_lb_target_group" "api" {
  name                 = "${var.name}-api"
  port                 = 8080
  protocol             = "HTTP"
  vpc_id               = var.vpc_id
  target_type          = "ip"
  deregistration_delay = 30
  health_check {
    path                = "/readyz"
    interval            = 10
    healthy_threshold   = 2
    unhealthy_threshold = 2
    timeout             = 5
  }
}

resource "aws_lb_listener" "https" {
  load_balancer_arn = aws_lb.api.arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = "ELBSecurityPolicy-TLS13-1-2-2021-06"
  certificate_arn   = var.certificate_arn
  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.api.arn
  }
}

# --- Services.

resource "aws_ecs_service" "api" {
  name                               = "api"
  cluster                            = aws_ecs_cluster.main.id
  task_definition                    = aws_ecs_task_definition.app["serve"].arn
  desired_count                      = var.api.min
  launch_type                        = "FARGATE"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }
  network_configuration {
    subnets         = var.private_subnet_ids
    security_groups = [var.tasks_security_group_id]
  }
  load_balancer {
    target_group_arn = aws_lb_target_group.api.arn
    container_name   = "serve"
    container_port   = 8080
  }
  lifecycle {
    ignore_changes = [desired_count] # autoscaling owns it
  }
  depends_on = [aws_lb_listener.https]
}

resource "aws_ecs_service" "work" {
  name                               = "work"
  cluster                            = aws_ecs_cluster.main.id
  task_definition                    = aws_ecs_task_definition.app["work"].arn
  desired_count                      = var.work.min
  launch_type                        = "FARGATE"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }
  network_configuration {
    subnets         = var.private_subnet_ids
    security_groups = [var.tasks_security_group_id]
  }
  lifecycle {
    ignore_changes = [desired_count]
  }
}

# --- Autoscaling.

resource "aws_appautoscaling_target" "api" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.main.name}/${aws_ecs_service.api.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.api.min
  max_capacity       = var.api.max
}

resource "aws_appautoscaling_policy" "api_requests" {
  name               = "${var.name}-api-requests"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.api.service_namespace
  resource_id        = aws_appautoscaling_target.api.resource_id
  scalable_dimension = aws_appautoscaling_target.api.scalable_dimension
  target_tracking_scaling_policy_configuration {
    predefined_metric_specification {
      predefined_metric_type = "ALBRequestCountPerTarget"
      resource_label         = "${aws_lb.api.arn_suffix}/${aws_lb_target_group.api.arn_suffix}"
    }
    # Requests a minute per task: well below one task's measured rate, so
    # the opening's first minute finds room (and the waiting room smooths it).
    target_value       = 60000
    scale_in_cooldown  = 300
    scale_out_cooldown = 30
  }
}

resource "aws_appautoscaling_policy" "api_cpu" {
  name               = "${var.name}-api-cpu"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.api.service_namespace
  resource_id        = aws_appautoscaling_target.api.resource_id
  scalable_dimension = aws_appautoscaling_target.api.scalable_dimension
  target_tracking_scaling_policy_configuration {
    predefined_metric_specification {
      predefined_metric_type = "ECSServiceAverageCPUUtilization"
    }
    target_value       = 60
    scale_in_cooldown  = 300
    scale_out_cooldown = 30
  }
}

resource "aws_appautoscaling_target" "work" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.main.name}/${aws_ecs_service.work.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.work.min
  max_capacity       = var.work.max
}

# The workers scale on how old the oldest claim message is: a backlog that
# is large but young is being drained; an old one is not.
resource "aws_appautoscaling_policy" "work_queue_age" {
  name               = "${var.name}-work-queue-age"
  policy_type        = "StepScaling"
  service_namespace  = aws_appautoscaling_target.work.service_namespace
  resource_id        = aws_appautoscaling_target.work.resource_id
  scalable_dimension = aws_appautoscaling_target.work.scalable_dimension
  step_scaling_policy_configuration {
    adjustment_type         = "ChangeInCapacity"
    cooldown                = 60
    metric_aggregation_type = "Maximum"
    step_adjustment {
      metric_interval_lower_bound = 0
      metric_interval_upper_bound = 20
      scaling_adjustment          = 1
    }
    step_adjustment {
      metric_interval_lower_bound = 20
      scaling_adjustment          = 3
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "work_queue_age_high" {
  alarm_name          = "${var.name}-claims-oldest-age-high"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = var.sqs.claims_queue }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 1
  threshold           = 10
  comparison_operator = "GreaterThanThreshold"
  alarm_actions       = [aws_appautoscaling_policy.work_queue_age.arn]
}

resource "aws_appautoscaling_policy" "work_scale_in" {
  name               = "${var.name}-work-scale-in"
  policy_type        = "StepScaling"
  service_namespace  = aws_appautoscaling_target.work.service_namespace
  resource_id        = aws_appautoscaling_target.work.resource_id
  scalable_dimension = aws_appautoscaling_target.work.scalable_dimension
  step_scaling_policy_configuration {
    adjustment_type         = "ChangeInCapacity"
    cooldown                = 300
    metric_aggregation_type = "Maximum"
    step_adjustment {
      metric_interval_upper_bound = 0
      scaling_adjustment          = -1
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "work_queue_age_low" {
  alarm_name          = "${var.name}-claims-oldest-age-low"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = var.sqs.claims_queue }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 3
  threshold           = 2
  comparison_operator = "LessThanThreshold"
  alarm_actions       = [aws_appautoscaling_policy.work_scale_in.arn]
}

output "api_url" {
  value = "https://${aws_lb.api.dns_name}"
}

output "cluster" {
  value = aws_ecs_cluster.main.name
}

output "migrate_task_definition" {
  description = "Run once per deploy, before the services take the new image: aws ecs run-task --task-definition this."
  value       = aws_ecs_task_definition.app["migrate"].arn
}

output "secret_names" {
  description = "Put their values before the first deploy."
  value       = { for env, s in aws_secretsmanager_secret.app : env => s.name }
}
