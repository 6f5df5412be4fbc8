# The model objects. A model's weights, optimizer slots and step counters live
# in the C++ core (one replica per device, reached through an external
# pointer); the R object holds the graph description, the compile settings
# and what callbacks need. Models have reference semantics (R6), as in keras3.

MirroredModel <- R6::R6Class("mirrored_model",
  public = list(
    name = NULL,
    optimizer = NULL,
    loss = NULL,
    compiled_metrics = NULL,
    # Per output: list(name, loss, weight, metrics) (R/model-outputs.R).
    compiled_outputs = NULL,
    loss_weights = NULL,
    stop_training = FALSE,
    history = NULL,
    jit_compile = FALSE,
    # The strategy in scope when the model was created (as in TensorFlow).
    strategy = NULL,
    training_state = NULL,
    # The function users hold (as_model_function(), R/model-call.R).
    fn = NULL,
    # ---- i14-mpapi ----
    # Keras' model.dtype_policy: the global policy when the model was made
    # (R/mixed-precision.R); compile(auto_scale_loss =) reads it.
    dtype_policy = "float32",
    # Set by compile(): the core's precision note is due once (compile_core()
    # can run twice for one compile(), when it builds the core model).
    precision_note_due = FALSE,
    initialize = function(name) {
      self$name <- name
      self$strategy <- get_strategy()
      self$dtype_policy <- global_dtype_policy_name()
    },
    # The core model, created on first use.
    ptr = function() {
      if (is.null(private$.ptr)) private$build_core()
      if (is_null_pointer(private$.ptr)) abort_restored_model(self$name)
      private$.ptr
    },
    is_built = function() !is.null(private$.ptr),
    # The weights will be set before any use (load_model()): build the core
    # model without running the initializers.
    skip_initialization = function() {
      if (is.null(private$.ptr)) private$.initialize <- FALSE
      invisible(self)
    },
    graph = function() private$.graph,
    get_weights = function() with_core(cpp_model_get_weights(self$ptr()), call = user_call()),
    set_weights = function(weights) {
      if (!is.list(weights)) {
        abort_value("{.arg weights} must be a list of arrays, not {describe(weights)}.", call = user_call())
      }
      with_core(cpp_model_set_weights(self$ptr(), weights), call = user_call())
      invisible(self)
    },
    count_params = function() count_params(self),
    print = function(...) {
      print_model_summary(self)
      invisible(self)
    }
  ),
  active = list(
    # Keras' trainable (R/freeze.R): setting it sets every layer's.
    trainable = function(value) {
      if (missing(value)) return(private$.trainable)
      private$.trainable <- check_trainable_value(value, call = NULL)
      set_model_layers_trainable(self, value)
    },
    # The symbolic tensors of the model's inputs and outputs, from which a
    # new keras_model() can be built (a feature extractor).
    inputs = function() {
      g <- private$.graph
      if (is.null(g)) return(NULL)
      lapply(g$inputs, function(i) g$nodes[[i + 1L]]$tensor)
    },
    outputs = function() {
      g <- private$.graph
      if (is.null(g)) return(NULL)
      lapply(g$outputs, function(i) g$nodes[[i + 1L]]$tensor)
    },
    input = function() {
      x <- self$inputs
      if (length(x) == 1) x[[1]] else x
    },
    output = function() {
      x <- self$outputs
      if (length(x) == 1) x[[1]] else x
    },
    # Variable objects (R/variables.R); get_weights() gives the arrays.
    trainable_weights = function() Filter(function(v) v$trainable, model_variables(self)),
    non_trainable_weights = function() Filter(function(v) !v$trainable, model_variables(self)),
    # Each layer once (a shared layer's later calls are not listed again).
    # A nested model is one entry.
    layers = function(value) {
      entries <- Filter(function(e) e$owner, graph_entries(private$.graph))
      current <- lapply(entries, entry_object)
      if (missing(value)) return(current)
      layers_write_back(value, current)
    },
    input_names = function() model_input_names(self),
    output_names = function() model_output_names(self),
    input_shape = function() private$.graph$nodes[[private$.graph$inputs[1] + 1]]$shape,
    output_shape = function() private$.graph$nodes[[private$.graph$outputs[1] + 1]]$shape,
    weights = function() model_variables(self)
  ),
  private = list(
    .graph = NULL,
    .ptr = NULL,
    .trainable = TRUE,
    .initialize = TRUE,
    build_core = function() {
      g <- private$.graph
      if (is.null(g)) abort_value("Model {.val {self$name}} has no input shape yet: give {.arg input_shape} or fit it on data.")
      shares <- graph_shares(g)
      nodes <- lapply(seq_along(g$nodes), function(k) {
        n <- g$nodes[[k]]
        list(class_name = n$layer$class_name, name = n$layer$name, inputs = as.integer(n$inputs),
             config = n$layer$config, seed = n$layer$seed, shares = shares[k], training = n$training)
      })
      s <- self$strategy
      private$.ptr <- with_core(cpp_model_new(nodes, as.integer(g$inputs), as.integer(g$outputs),
                                              s$devices, model_threads(), strategy_collective_timeout(s),
                                              private$.initialize, s$cross_device_ops %||% "",
                                              s$logical_per_gpu %||% 1L, allow_tf32(),
                                              if (inherits(s, "multi_worker_mirrored_strategy")) s$workers))
      # i14-overlap: the gradient buckets' size (communication_options()).
      with_core(cpp_model_set_bytes_per_pack(private$.ptr, s$communication_options$bytes_per_pack %||% 0))
      fresh <- private$.initialize
      register_layer_models(self)
      # Adapted layers' values (not when load_model() sets every weight next).
      attach_layer_states(self, write = fresh)
      private$.initialize <- TRUE
      # Layers already trained in another model start from those weights;
      # layers of nested models that were built start from their weights.
      if (fresh) {
        apply_layer_start_weights(self)
        apply_nested_start_weights(self)
      }
      comm <- cpp_model_communicator(private$.ptr)
      if (nzchar(comm[["note"]]) && !isTRUE(s$announced)) {
        s$announced <- TRUE
        cli::cli_inform(c(i = "{comm[['note']]}."), class = "mirrored_strategy_message")
      }
      if (!is.null(self$optimizer)) compile_core(self)
    }
  )
)

FunctionalModel <- R6::R6Class("mirrored_functional",
  inherit = MirroredModel,
  public = list(
    initialize = function(name, graph) {
      super$initialize(name)
      private$.graph <- graph
      register_layer_models(self)
    }
  )
)

SequentialModel <- R6::R6Class("mirrored_sequential",
  inherit = MirroredModel,
  public = list(
    initialize = function(name, input_shape = NULL, input_name = NULL, input_dtype = NULL) {
      super$initialize(name)
      private$.input_shape <- input_shape
      private$.input_name <- input_name
      private$.input_dtype <- input_dtype %||% "float32"
      private$rebuild_graph()
    },
    add = function(layer) {
      # keras3: an Input tensor (keras_input()) may start the list of layers.
      if (is_keras_tensor(layer) && identical(layer$node$layer$class_name, "InputLayer")) layer <- layer$node$layer
      layer <- model_object(layer_object(layer))
      if (identical(layer, self)) abort_value("Model {.val {self$name}} cannot be added to itself.")
      if (!inherits(layer, "mirrored_layer") && !inherits(layer, "mirrored_model")) {
        abort_value("Only layers and models can be added to a sequential model, not {describe(layer)}.")
      }
      if (inherits(layer, "mirrored_model")) {
        g <- layer$graph()
        if (!is.null(g) && (length(g$inputs) != 1 || length(g$outputs) != 1)) {
          abort_value("Model {.val {layer$name}} has {length(g$inputs)} input{?s} and {length(g$outputs)} output{?s}; a sequential model's layers have one of each.")
        }
        if (length(private$.layers) == 0 && is.null(private$.input_shape) && !is.null(g)) {
          private$.input_shape <- g$nodes[[g$inputs + 1L]]$shape
        }
      } else if (layer$class_name == "InputLayer") {
        # Keras: an InputLayer first sets the model's input (as the
        # `model$layers` of another model hand it over); later, an error.
        if (length(private$.layers) || !is.null(private$.input_shape)) {
          abort_value("Model {.val {self$name}} already has an input; an input layer can only come first.")
        }
        private$.input_shape <- as.integer(unlist(layer$config$batch_shape[-1]))
        private$.input_name <- layer$name
        private$.input_dtype <- layer$config$dtype %||% "float32"
        return(invisible(self))
      }
      if (any(vapply(private$.layers, function(l) identical(l, layer), logical(1)))) {
        abort_value("Layer {.val {layer$name}} is already in the model.")
      }
      if (length(private$.layers) == 0 && is.null(private$.input_shape) && !is.null(layer$input_shape)) {
        private$.input_shape <- layer$input_shape
      }
      old <- if (self$is_built()) self$get_weights() else NULL
      private$.layers <- c(private$.layers, list(layer))
      tryCatch(private$rebuild_graph(), error = function(e) {
        private$.layers <- utils::head(private$.layers, -1)
        stop(e)
      })
      if (!is.null(old)) {
        private$.ptr <- NULL
        w <- self$get_weights()
        w[seq_along(old)] <- old
        self$set_weights(w)
      }
      invisible(self)
    },
    # Keras' Sequential.pop(): the last layer goes; the others keep their
    # weights. The graph is rebuilt at once whatever `rebuild` says (Keras
    # rebuilds at the next use with rebuild = FALSE: no difference seen).
    pop = function(rebuild = TRUE) {
      check_bool(rebuild, "rebuild")
      if (!length(private$.layers)) abort_value("Model {.val {self$name}} has no layers to remove.")
      old <- if (self$is_built()) self$get_weights() else NULL
      private$.layers <- utils::head(private$.layers, -1)
      private$rebuild_graph()
      private$.ptr <- NULL
      if (!is.null(old) && self$is_built()) {
        w <- self$get_weights()
        self$set_weights(old[seq_along(w)])
      }
      invisible(self)
    },
    # Fixes the input shape (from data) if none was given.
    build = function(input_shape) {
      if (is.null(private$.input_shape)) {
        private$.input_shape <- as.integer(input_shape)
        private$rebuild_graph()
      }
      invisible(self)
    }
  ),
  active = list(
    layers = function(value) {
      current <- lapply(private$.layers, function(l) if (inherits(l, "mirrored_model")) as_model_function(l) else as_layer_function(l))
      if (missing(value)) return(current)
      layers_write_back(value, current)
    }
  ),
  private = list(
    .layers = list(),
    .input_shape = NULL,
    .input_name = NULL,
    .input_dtype = "float32",
    rebuild_graph = function() {
      if (is.null(private$.input_shape) || length(private$.layers) == 0) {
        private$.graph <- NULL
        return(invisible())
      }
      private$.input_name <- private$.input_name %||% auto_name("input_layer")
      input <- input_layer(private$.input_shape, private$.input_name, private$.input_dtype)
      x <- first <- input$last_output <- keras_tensor(input, list(), private$.input_shape, dtype = private$.input_dtype)
      for (layer in private$.layers) {
        # A nested model is inlined (R/model-call.R); a layer is one node.
        x <- if (inherits(layer, "mirrored_model")) call_model(layer, x, call = NULL)
             else keras_tensor(layer, list(x), layer$output_shape(x$shape))
        if (!is_keras_tensor(x)) x <- x[[1]]
        if (!inherits(layer, "mirrored_model")) layer$last_output <- x
      }
      private$.graph <- collect_model_graph(list(first), list(x), call = NULL)
      register_layer_models(self)
    }
  )
)

# CPU threads per replica: option mirrored.cpu_threads, else the cores
# divided among the replicas (0 lets the core decide).
# options(mirrored.allow_tf32 = TRUE) lets GPU matrix products use TF32
# tensor cores (faster, ~1e-3 relative error), as TensorFlow's
# enable_tensor_float_32_execution does; read when a model is placed.
allow_tf32 <- function() {
  v <- getOption("mirrored.allow_tf32", FALSE)
  if (!is.logical(v) || length(v) != 1 || is.na(v)) {
    abort_value("{.code options(mirrored.allow_tf32)} must be TRUE or FALSE, not {describe(v)}.")
  }
  v
}

model_threads <- function() {
  n <- getOption("mirrored.cpu_threads", 0L)
  check_int(n, "options(mirrored.cpu_threads)", min = 0)
}

# Seconds a replica waits for its peers in a collective before failing.
collective_timeout <- function() {
  check_num(getOption("mirrored.collective_timeout", 300), "options(mirrored.collective_timeout)",
            min = 0, min_open = TRUE)
}

# Test and diagnostic hooks (internal).
replica_info <- function(model) with_core(cpp_model_replica_info(model$ptr()))
replica_weights <- function(model, rank) with_core(cpp_model_get_weights(model$ptr(), rank))
inject_replica_fault <- function(model, rank, step, kind = c("error", "stall", "none"), seconds = 0) {
  with_core(cpp_model_inject_fault(model$ptr(), rank, step, match.arg(kind), seconds))
}

# `model$layers[[1]]$trainable <- FALSE` is R's complex assignment: it
# changes the layer (a reference object, so the change is made at once) and
# then assigns the list back to `model$layers`. That write-back of the same
# layers is accepted and does nothing; any other value is an error, since a
# model's layers are fixed when it is built.
layers_write_back <- function(value, current) {
  same <- is.list(value) && length(value) == length(current) &&
    all(vapply(seq_along(current), function(i) identical(value[[i]], current[[i]]), logical(1)))
  if (!same) {
    abort_value("A model's {.field layers} cannot be replaced; change a layer through it instead, e.g. {.code model$layers[[1]]$trainable <- FALSE}.")
  }
  invisible(NULL)
}
