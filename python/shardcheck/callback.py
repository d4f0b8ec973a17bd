"""ShardcheckCallback: shardcheck.preflight for transformers' Trainer and TRL's trainers.

Imported only when asked for (shardcheck.ShardcheckCallback), so shardcheck needs no transformers.
Trainer.train prepares (wraps) the model before it calls on_train_begin (trainer.py
_inner_training_loop, transformers 5.12.1), so a wrapping failure such as accelerate's
"Could not find the transformer layer class" is raised before that event. The callback therefore
checks at on_init_end, the end of Trainer.__init__ (a callback given as Trainer(callbacks=[...])),
when the model is not wrapped yet, and at on_train_begin only when it was added later
(trainer.add_callback): the settings come from the environment accelerate launch and
TrainingArguments export (FSDP_*), and the world size from the arguments.
"""
from transformers import TrainerCallback

from .run import preflight


class ShardcheckCallback(TrainerCallback):
    """Runs shardcheck.preflight on the Trainer's model; raises PreflightError on an error finding."""

    def __init__(self, config=None, **settings):
        self.config = config
        self.settings = settings
        self.checked = False

    def _check(self, args, model):
        if self.checked or model is None:
            return
        self.checked = True
        settings = dict(self.settings)
        world = getattr(args, "world_size", None)
        if isinstance(world, int) and world > 1 and "world_size" not in settings:
            settings["world_size"] = world
        preflight(model, config=self.config, **settings)

    def on_init_end(self, args, state, control, model=None, **kwargs):
        self._check(args, model)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._check(args, model)
