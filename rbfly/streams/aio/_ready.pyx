# cython: language_level=3
"""
An awaitable that is done at once: awaiting it gives its value without a
coroutine, a future or a trip through the event loop.

Where a value is usually ready (the next message of a chunk at hand, the
publishing id of a message buffered for sending), an ``async def`` costs a
coroutine object, a frame and a ``StopIteration`` per call. This small C
type costs an allocation: its ``am_send`` slot returns the value without
raising ``StopIteration`` (the interpreter's ``await`` sends through that
slot), and it keeps the iterator protocol for where the slot is not used
(e.g. under a tracer).

It is also a coroutine to :py:func:`asyncio.iscoroutine` (``send``,
``throw``, ``close``, ``__await__``), so ``asyncio.create_task()`` takes it
as it takes the coroutine of an ``async def``.
"""

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
        .tp_name = "rbfly.streams.aio._ready.Ready",
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

cpdef object ready(object value):
    """An awaitable that is done: awaiting it gives ``value`` at once."""
    return rbfly_ready_new(value)
