# cython: language_level=3
"""
The message iterator of ``client.subscribe()``: ``async for body in ...``.

An ``async for`` over an async generator costs a generator resumption, the
wrapping of the yielded value and a ``ContextVar.set`` call per message:
about 200 ns, as much as decoding the message. Most of the time the next
message is already decoded, in the chunk at hand, so :py:class:`Bodies`
answers ``__anext__`` with an awaitable that is done at once: a small C
type whose ``am_send`` slot returns the body without raising
``StopIteration`` (the interpreter's ``async for`` sends to it through
that slot), after setting the message context through the C API. Only at
the end of a chunk does it await the next one, in a coroutine. Measured
(10-byte AMQP messages, uvloop): 211 ns per message of the generator
against 90 ns.

The message context (:py:func:`rbfly.streams.get_message_ctx`) is set per
message, as before: a task created while a message is processed keeps that
message's context.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

from ..amqp._message cimport MessageCtx, set_ctx

cdef extern from *:
    """
    /* An awaitable that is done: awaiting it gives its value at once. */
    typedef struct {
        PyObject_HEAD
        PyObject *value;
    } rbfly_ReadyObject;

    static void rbfly_ready_dealloc(PyObject *self) {
        Py_XDECREF(((rbfly_ReadyObject *)self)->value);
        PyObject_Free(self);
    }

    static PyObject *rbfly_ready_await(PyObject *self) {
        Py_INCREF(self);
        return self;
    }

    /* the value, once; None after it */
    static PyObject *rbfly_ready_take(PyObject *self) {
        rbfly_ReadyObject *r = (rbfly_ReadyObject *)self;
        PyObject *value = r->value;
        r->value = NULL;
        if (value == NULL) {
            Py_INCREF(Py_None);
            value = Py_None;
        }
        return value;   /* a new reference */
    }

    static PySendResult rbfly_ready_send(PyObject *self, PyObject *arg, PyObject **result) {
        *result = rbfly_ready_take(self);
        return PYGEN_RETURN;
    }

    /* iterator protocol, used where am_send is not (e.g. under a tracer) */
    static PyObject *rbfly_ready_next(PyObject *self) {
        PyObject *value = rbfly_ready_take(self);
        PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
        Py_DECREF(value);
        if (exc != NULL) {
            PyErr_SetObject(PyExc_StopIteration, exc);
            Py_DECREF(exc);
        }
        return NULL;
    }

    static PyObject *rbfly_ready_send_method(PyObject *self, PyObject *arg) {
        return rbfly_ready_next(self);
    }

    static PyObject *rbfly_ready_throw(PyObject *self, PyObject *args) {
        PyObject *type, *value = NULL, *tb = NULL;
        if (!PyArg_UnpackTuple(args, "throw", 1, 3, &type, &value, &tb))
            return NULL;
        if (PyExceptionInstance_Check(type))
            PyErr_SetObject((PyObject *)Py_TYPE(type), type);
        else
            PyErr_SetObject(type, value);
        return NULL;
    }

    static PyObject *rbfly_ready_close(PyObject *self, PyObject *unused) {
        Py_CLEAR(((rbfly_ReadyObject *)self)->value);
        Py_RETURN_NONE;
    }

    static PyMethodDef rbfly_ready_methods[] = {
        {"send", rbfly_ready_send_method, METH_O, NULL},
        {"throw", rbfly_ready_throw, METH_VARARGS, NULL},
        {"close", rbfly_ready_close, METH_NOARGS, NULL},
        {NULL, NULL, 0, NULL},
    };

    static PyAsyncMethods rbfly_ready_async = {
        rbfly_ready_await, NULL, NULL, rbfly_ready_send,
    };

    static PyTypeObject rbfly_ReadyType = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "rbfly.streams._bodies.Ready",
        .tp_basicsize = sizeof(rbfly_ReadyObject),
        .tp_dealloc = rbfly_ready_dealloc,
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_as_async = &rbfly_ready_async,
        .tp_iter = PyObject_SelfIter,
        .tp_iternext = rbfly_ready_next,
        .tp_methods = rbfly_ready_methods,
    };

    static int rbfly_ready_init(void) {
        return PyType_Ready(&rbfly_ReadyType);
    }

    static PyObject *rbfly_ready_new(PyObject *value) {
        rbfly_ReadyObject *r = PyObject_New(rbfly_ReadyObject, &rbfly_ReadyType);
        if (r == NULL)
            return NULL;
        Py_INCREF(value);
        r->value = value;
        return (PyObject *)r;
    }
    """
    int rbfly_ready_init() except -1
    object rbfly_ready_new(object value)

rbfly_ready_init()

cdef class Bodies:
    """
    Async iterator over the bodies of the messages of a chunk generator,
    each message set as the current message context.

    Also an async generator's ``asend``, ``athrow`` and ``aclose``, as
    ``subscribe()`` returned an async generator before (and RbFly 0.10's
    does): ``aclose()`` ends the subscription.
    """
    cdef object _chunks
    cdef object _messages   # a Chunk: a list (subclass)
    cdef Py_ssize_t _next
    cdef bint _closed

    def __cinit__(self, chunks: object) -> None:
        self._chunks = chunks
        self._messages = []
        self._next = 0
        self._closed = False

    def __aiter__(self) -> Bodies:
        return self

    def __anext__(self) -> object:
        cdef MessageCtx msg
        cdef object messages = self._messages
        cdef Py_ssize_t i = self._next
        if i < PyList_GET_SIZE(messages):
            msg = <MessageCtx>PyList_GET_ITEM(messages, i)
            self._next = i + 1
            set_ctx(msg)
            return rbfly_ready_new(msg.body)
        return self._next_chunk()

    async def _next_chunk(self) -> object:
        cdef MessageCtx msg
        if self._closed:
            raise StopAsyncIteration
        while True:
            messages = await self._chunks.__anext__()
            if messages:
                if not isinstance(messages, list):
                    raise TypeError('chunks must be lists of messages')
                self._messages = messages
                self._next = 1
                msg = <MessageCtx>messages[0]
                set_ctx(msg)
                return msg.body

    def asend(self, value: object) -> object:
        if value is not None:
            raise TypeError('can only send None to a subscription')
        return self.__anext__()

    async def athrow(self, typ: object, val: object = None, tb: object = None) -> object:
        await self.aclose()
        if val is None:
            raise typ
        raise val

    async def aclose(self) -> None:
        """End the subscription."""
        self._closed = True
        self._messages = []
        self._next = 0
        await self._chunks.aclose()
