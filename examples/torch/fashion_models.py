"""fashion_models.py: the example PyTorch modules gradshare ships, all for Fashion-MNIST.

Every module takes a batch shaped [batch, 1, 28, 28] (or [batch, 784] for the MLP, whose
config says model.input_shape: [784]) and returns logits [batch, 10], as gradshare's
softmax cross-entropy expects. write_module.py saves them with torch.jit.script.
"""
import math

import torch
from torch import nn


def init_as_gradshare(relu_layers, output):
    """What gradshare's model.init: auto does: He normal before a ReLU, Xavier normal for the
    output layer, zero biases."""
    for layer in relu_layers:
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    nn.init.xavier_normal_(output.weight)
    for layer in (*relu_layers, output):
        nn.init.zeros_(layer.bias)


class Mlp(nn.Module):
    """784-256-128-10 with ReLU: the same network as configs/fashion-mnist-mlp.yaml, initialised
    as gradshare's model.init: auto does (He normal before a ReLU, Xavier normal for the
    output layer, zero biases)."""

    def __init__(self):
        super().__init__()
        self.hidden1 = nn.Linear(784, 256)
        self.hidden2 = nn.Linear(256, 128)
        self.out = nn.Linear(128, 10)
        init_as_gradshare((self.hidden1, self.hidden2), self.out)

    def forward(self, x):
        x = x.flatten(1)
        x = torch.relu(self.hidden1(x))
        x = torch.relu(self.hidden2(x))
        return self.out(x)


class Cnn(nn.Module):
    """Two 3x3 convolutions (32 and 64 filters, ReLU, 2x2 max pooling after each), a 128-unit
    ReLU layer and the output layer: the same network as configs/fashion-mnist-cnn.yaml,
    initialised as its model.init: auto does."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.hidden = nn.Linear(64 * 7 * 7, 128)
        self.out = nn.Linear(128, 10)
        init_as_gradshare((self.conv1, self.conv2, self.hidden), self.out)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.hidden(x.flatten(1)))
        return self.out(x)


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (1x1 when the shape changes)."""

    def __init__(self, channels_in, channels_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        if stride != 1 or channels_in != channels_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels_out, 1, stride, bias=False),
                nn.BatchNorm2d(channels_out))
        else:
            self.shortcut = nn.Sequential()

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    """A small ResNet: a 3x3 stem, three stages of residual blocks (28 -> 14 -> 7), global
    average pooling and a linear classifier; about 0.3 M parameters."""

    def __init__(self, widths=(32, 64, 128)):
        super().__init__()
        self.stem = nn.Conv2d(1, widths[0], 3, 1, 1, bias=False)
        self.stem_bn = nn.BatchNorm2d(widths[0])
        self.stage1 = ResidualBlock(widths[0], widths[0], 1)
        self.stage2 = ResidualBlock(widths[0], widths[1], 2)
        self.stage3 = ResidualBlock(widths[1], widths[2], 2)
        self.classifier = nn.Linear(widths[2], 10)

    def forward(self, x):
        x = torch.relu(self.stem_bn(self.stem(x)))
        x = self.stage3(self.stage2(self.stage1(x)))
        x = x.mean(dim=(2, 3))
        return self.classifier(x)


class RowLstm(nn.Module):
    """An LSTM reading each image as a sequence of 28 rows of 28 pixels; the last hidden state
    goes through a linear classifier."""

    def __init__(self, hidden=128):
        super().__init__()
        self.lstm = nn.LSTM(28, hidden, batch_first=True)
        self.classifier = nn.Linear(hidden, 10)

    def forward(self, x):
        rows = x.reshape(x.shape[0], 28, 28)
        out, _ = self.lstm(rows)
        return self.classifier(out[:, -1, :])


class RowTransformer(nn.Module):
    """A transformer encoder over the 28 rows as tokens: a linear embedding plus a learned
    position embedding, pre-norm encoder layers (layer norm, multi-head attention, a GELU
    feed-forward), mean pooling and a linear classifier; about 1.15 M parameters."""

    def __init__(self, width=128, heads=4, layers=5, feedforward=640):
        super().__init__()
        self.embed = nn.Linear(28, width)
        self.position = nn.Parameter(torch.randn(1, 28, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, feedforward, dropout=0.1,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.classifier = nn.Linear(width, 10)

    def forward(self, x):
        tokens = self.embed(x.reshape(x.shape[0], 28, 28)) + self.position
        encoded = self.norm(self.encoder(tokens))
        return self.classifier(encoded.mean(dim=1))


MODELS = {"mlp": Mlp, "cnn": Cnn, "resnet": ResNet, "lstm": RowLstm, "transformer": RowTransformer}


def parameter_count(module):
    return sum(p.numel() for p in module.parameters())


def input_shape(name):
    return [784] if name == "mlp" else [1, 28, 28]


def make(name, seed=0):
    torch.manual_seed(seed)
    module = MODELS[name]()
    assert not math.isnan(float(sum(p.sum() for p in module.parameters())))
    return module
