# The graph node of a layer written in R (a Layer() class's instance or a
# layer_lambda()): a LayerNode (R/layer.R) whose config gains the traced
# graph ("mirrored_graph") at its first call, when the input shapes are
# known. From then on the core's "Traced" layer kind runs it like any
# layer; R is not called in the step. A loaded model's custom layer whose
# class is not given in custom_objects is a plain LayerNode of that config:
# its graph runs without the R class.

TracedLayerNode <- R6::R6Class("mirrored_traced_layer",
  inherit = LayerNode,
  public = list(
    # The user's instance (Layer()), or list(f, arguments, output_shape)
    # for layer_lambda().
    user = NULL,
    lambda = NULL,
    # The per-sample input shapes the graph was traced for.
    traced_shapes = NULL,
    initialize = function(class_name, user = NULL, lambda = NULL, config = list()) {
      self$class_name <- class_name
      self$seed <- draw_seed()
      self$user <- user
      self$lambda <- lambda
      if (!is.null(user)) {
        if (is.null(user$name)) user$name <- auto_name(to_snake_case(class_name))
        config <- custom_layer_config(user)
        self$input_shape <- user$.__enclos_env__$private$.input_shape
      }
      self$config <- config
      self$name <- config$name
    },
    spec = function(input_shapes, call = sys.call(-1)) {
      shapes <- lapply(input_shapes, as.integer)
      if (is.null(self$traced_shapes)) {
        self$trace(shapes, call)
      } else if (!identical(shapes, self$traced_shapes)) {
        fmt <- function(ss) paste(vapply(ss, function(s) paste0("(None, ", paste(dim_text(s), collapse = ", "), ")"), ""),
                                  collapse = ", ")
        abort_kind("shape", c("Layer {.val {self$name}} was traced for inputs {fmt(self$traced_shapes)} and is now called on {fmt(shapes)}.",
                              i = "A layer written in R is traced once: call it on inputs of the same shapes."),
                   call = call)
      }
      super$spec(input_shapes, call = call)
    },
    # Builds the user's instance (once) and traces its call() (or the
    # lambda's function) on inputs of these per-sample shapes.
    trace = function(shapes, call) {
      inputs <- lapply(shapes, function(s) list(shape = c(NA_integer_, s)))
      one <- function(xs) if (length(xs) == 1) xs[[1]] else xs
      if (!is.null(self$user)) {
        u <- self$user
        if (!isTRUE(u$built)) {
          # A build() that fails leaves no weights behind (a retry adds them once).
          priv <- u$.__enclos_env__$private
          declared <- priv$.weights
          tryCatch(u$build(one(lapply(shapes, function(s) shape(NA, s)))), error = function(e) {
            priv$.weights <- declared
            stop(e)
          })
          u$built <- TRUE
        }
        specs <- u$weight_specs() %||% list()
        ordered <- trainable_first(specs)
        specs <- ordered$specs
        pos <- ordered$pos
        fn <- function(...) {
          xs <- list(...)
          ctx <- xs[[1]]$ctx
          ws <- ctx$weight_tensors
          ctx$added_losses <- list()
          y <- call_with_weights(u, xs, function(h) ws[[pos[h$index]]])
          # self$add_loss() terms: their sum is one more output of the graph.
          if (!length(ctx$added_losses) || !is_traced_tensor(y)) return(y)
          added <<- TRUE
          list(y, Reduce(op_add, ctx$added_losses))
        }
        what <- paste0("call() of layer class ", self$class_name)
        config <- custom_layer_config(u)
      } else {
        specs <- list()
        lam <- self$lambda
        fn <- function(...) do.call(lam$f, c(list(one(list(...))), lam$arguments))
        what <- "the function of layer_lambda()"
        config <- self$config
      }
      added <- FALSE  # set by fn when call() used self$add_loss()
      tr <- trace_function(fn, inputs, weights = specs, what = what, call = call, owner = self$user)
      if (length(tr$outputs) != 1 + added) {
        abort_not_yet("{.val {self$name}}: {what} returned {length(tr$outputs)} tensors; layers written in R return one.",
                      call = call)
      }
      out <- tr$outputs[[1]]$shape
      if (!length(out) || !is.na(out[1])) {
        abort_kind("shape", "{.val {self$name}}: {what} must return a tensor that keeps the batch axis first; it returned shape {format(shape(out))}.",
                   call = call)
      }
      # A class's own compute_output_shape() must say what call() gives
      # (Keras builds the symbolic output from it).
      cos <- if (!is.null(self$user)) self$user$compute_output_shape
      if (is.function(cos)) {
        declared <- tryCatch(as.integer(shape(cos(if (length(shapes) == 1) shape(NA, shapes[[1]]) else
          lapply(shapes, function(s) shape(NA, s))))), error = function(e) NULL)
        if (!is.null(declared) && !identical(declared[-1], as.integer(out[-1]))) {
          abort_kind("shape", "{.val {self$name}}: {.fn compute_output_shape} of layer class {.cls {self$class_name}} gives {format(shape(declared))}, but its {.fn call} returns {format(shape(out))}.",
                     call = call)
        }
      }
      want <- self$lambda$output_shape
      if (!is.null(want) && !identical(as.integer(want), as.integer(out[-1]))) {
        abort_kind("shape", "{.val {self$name}}: {.arg output_shape} is {format(shape(want))} but the function returns {format(shape(out[-1]))} per sample.",
                   call = call)
      }
      config$mirrored_graph <- tr$graph
      self$config <- config
      self$traced_shapes <- shapes
      invisible(tr)
    }
  )
)

# Keras orders a layer's weights trainable first, then the others
# (layer$weights, .keras files): the graph declares them so. Returns the
# specs in that order and `pos`, which maps add_weight()'s order to it.
trainable_first <- function(specs) {
  trainable <- vapply(specs, function(w) isTRUE(w$trainable), logical(1))
  order <- c(which(trainable), which(!trainable))
  list(specs = specs[order], pos = match(seq_along(order), order))
}

# A Layer() class's layer re-created from its saved config (Keras'
# from_config: the class's initialize() takes the config's entries, or the
# class's own from_config(config) / from_config(cls, config) makes it,
# with `cls` (also `__class__` and the class name) the constructor);
# traced again at its first call, on the shapes of the loaded model.
custom_layer_from_config <- function(cls_fn, cls, cfg) {
  args <- cfg
  args$mirrored_graph <- NULL
  if (is.list(args$dtype)) args$dtype <- args$dtype$config$name %||% NULL
  gen <- attr(cls_fn, "generator")
  ctor <- function(...) new_custom_layer_node(gen, cls, rlang::list2(...))
  fc <- gen$public_methods$from_config
  if (!is.function(fc)) return(ctor(!!!args))
  env <- new.env(parent = environment(fc))
  env$cls <- ctor
  env[["__class__"]] <- ctor
  env[[cls]] <- ctor
  environment(fc) <- env
  out <- if ("cls" %in% names(formals(fc))) fc(cls = ctor, config = args) else fc(args)
  node <- tryCatch(layer_object(out), error = function(e) NULL)
  if (!inherits(node, "mirrored_layer")) {
    abort_value("{.fn from_config} of layer class {.cls {cls}} must return a layer (call {.code cls(...)}), not {describe(out)}.",
                call = NULL)
  }
  node
}

# The node of a new instance of the class of generator `gen` from `args`
# (positional ones first, then named, as from_config() passes them).
new_custom_layer_node <- function(gen, cls, args) {
  init <- gen$public_methods$initialize
  takes <- if (is.function(init)) names(formals(init)) else "..."
  nms <- names(args) %||% rep("", length(args))
  # A positional argument fills its formal even when the config names it
  # too (Python's config.pop() before cls(sublayer, **config)).
  positional <- sum(!nzchar(nms))
  formals_taken <- utils::head(setdiff(takes, "..."), positional)
  args <- args[!(nzchar(nms) & nms %in% formals_taken)]
  # Keras passes get_config()'s list as it is; mirrored's config also holds
  # the base keys, which an initialize() without `...` (the guides'
  # initialize = function(factor)) cannot take: they are set afterwards.
  late <- list()
  if (!"..." %in% takes) {
    base <- setdiff(intersect(names(args), c("name", "trainable", "dtype")), takes)
    late <- args[base]
    args[base] <- NULL
  }
  user <- do.call(gen$new, args)
  if (!is.null(late$name)) user$name <- late$name
  if (!is.null(late$trainable)) user$trainable <- late$trainable
  TracedLayerNode$new(cls, user = user)
}

# A custom layer's config: the base keys (name, trainable, dtype), then
# what the user's get_config() adds (Keras' layout for a custom class),
# Keras objects in it (layers, regularizers, ...) serialized as Keras'
# serialize_keras_object() writes them.
custom_layer_config <- function(u) {
  base <- list(name = u$name, trainable = !identical(u$trainable, FALSE))
  dt <- layer_dtype_config(u$dtype, "Layer", call = NULL)
  if (!is.null(dt)) base$dtype <- dt
  user <- u$get_config()
  if (!is.list(user) || (length(user) && is.null(names(user)))) {
    abort_value("{.fn get_config} of layer class {.cls {class(u)[1]}} must return a named list, not {describe(user)}.",
                call = NULL)
  }
  user$mirrored_graph <- NULL
  for (nm in names(user)) {
    if (!is.null(user[[nm]])) user[[nm]] <- config_json_value(user[[nm]], class(u)[1], nm)
  }
  utils::modifyList(base, user, keep.null = TRUE)
}

# A get_config() value as JSON can hold it: numbers, strings, logicals and
# lists as they are, shapes as their dims, Keras objects serialized.
config_json_value <- function(v, cls, key) {
  if (inherits(v, "keras_shape")) return(as.integer(v))
  if (is.atomic(v) && !is.object(v)) return(v)
  if (is.list(v) && !is.object(v)) {
    out <- lapply(v, config_json_value, cls = cls, key = key)
    return(if (length(out)) out else v)
  }
  k <- tryCatch(serialize_keras_object(v), mirrored_not_yet_error = function(e) NULL)
  if (is.null(k)) {
    abort_value("{.fn get_config} of layer class {.cls {cls}} returns {describe(v)} in {.field {key}}: a config holds numbers, strings, lists and Keras objects (layers, regularizers, ...).",
                call = NULL)
  }
  k
}

# Runs the user's call() with every weight handle in its fields (public and
# private, and inside plain lists) swapped for the weight's traced tensor
# (`tensor_of(handle)`); the handles are put back afterwards.
call_with_weights <- function(u, xs, tensor_of) {
  envs <- list(u, u$.__enclos_env__$private)
  saved <- list()
  swap <- function(v) {
    if (inherits(v, "mirrored_weight_handle")) return(tensor_of(v))
    if (is.list(v) && !is.object(v)) return(lapply(v, swap))
    v
  }
  has_handle <- function(v) {
    inherits(v, "mirrored_weight_handle") ||
      (is.list(v) && !is.object(v) && any(vapply(v, has_handle, logical(1))))
  }
  for (e in Filter(is.environment, envs)) {
    for (nm in ls(e, all.names = TRUE)) {
      if (bindingIsActive(nm, e) || bindingIsLocked(nm, e)) next
      v <- get(nm, envir = e)
      if (has_handle(v)) {
        saved[[length(saved) + 1L]] <- list(e = e, nm = nm, v = v)
        assign(nm, swap(v), envir = e)
      }
    }
  }
  on.exit(for (s in saved) assign(s$nm, s$v, envir = s$e))
  one <- if (length(xs) == 1) xs[[1]] else xs
  if ("training" %in% names(formals(u$call))) u$call(one, training = NULL) else u$call(one)
}

#' Wrap an R function as a layer
#'
#' keras3's `layer_lambda()`: a layer whose computation is `f`, written with
#' `op_*` functions and R's operators. `f` is traced once, on the shapes of
#' the layer's first call, into a graph the core runs and differentiates:
#' no R runs while the model trains. It cannot read tensor values (`if`,
#' `as.numeric()`, functions that are not ops): those are errors of class
#' `mirrored_trace_error` naming the line.
#'
#' @inheritParams layer_dense
#' @param f The function: `f(inputs)` (a tensor, or a list of them for
#'   several inputs), returning one tensor that keeps the batch axis.
#' @param output_shape The per-sample output shape, checked against what
#'   `f` returns (`NULL`: not checked).
#' @param mask Not supported (must be `NULL`).
#' @param arguments A named list of extra arguments to `f`.
#' @family layers
#' @examples
#' inputs <- keras_input(shape = 3)
#' outputs <- inputs |> layer_lambda(function(x) x * 2 + 1)
#' model <- keras_model(inputs, outputs)
#' predict(model, matrix(1:6, 2, 3), verbose = 0)
#' @export
layer_lambda <- function(object, f, output_shape = NULL, mask = NULL, arguments = NULL, ...) {
  if (!missing(object)) force(object)
  call <- sys.call()
  dots <- layer_dots(list(...), call = call)
  if (!is.function(f)) abort_value("{.arg f} must be a function, not {describe(f)}.", call = call)
  if (!is.null(mask)) abort_not_yet("{.arg mask} of {.fn layer_lambda} is not supported yet; it must be NULL.", call = call)
  if (!is.null(arguments) && (!is.list(arguments) || (length(arguments) && is.null(names(arguments))))) {
    abort_value("{.arg arguments} must be a named list, not {describe(arguments)}.", call = call)
  }
  if (!is.null(output_shape)) output_shape <- as.integer(check_shape(output_shape, "output_shape", call = call))
  cfg <- list(name = dots$name %||% auto_name("lambda"), trainable = !identical(dots$trainable, FALSE))
  dt <- layer_dtype_config(dots$dtype, "layer_lambda", call = call)
  if (!is.null(dt)) cfg$dtype <- dt
  node <- TracedLayerNode$new("Lambda", lambda = list(f = f, arguments = arguments %||% list(),
                                                      output_shape = output_shape), config = cfg)
  node$input_shape <- dots$input_shape
  compose_layer(if (missing(object)) NULL else object, node)
}
